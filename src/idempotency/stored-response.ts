/** The completed outcome of a key: what a replay answers, byte for byte. */
export interface StoredResponse {
  paymentId: string;
  /** SHA-256 of the original request (hex), to tell a replay from a reused key. */
  fingerprint: string;
  status: number;
  body: string;
  expiresAt: Date;
}

/** The completed outcome of a key: what a replay answers, byte for byte. */
export interface StoredResponse {
  /**
   * The payment created, or the payment refunded when `refundId` is set; absent for a POST that
   * creates no payment (webhook endpoints, replays).
   */
  paymentId?: string;
  /** The refund created (POST /payments/{id}/refunds); absent for POST /payments. */
  refundId?: string;
  /** SHA-256 of the original request (hex), to tell a replay from a reused key. */
  fingerprint: string;
  status: number;
  body: string;
  expiresAt: Date;
}

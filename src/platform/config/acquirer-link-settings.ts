import { z } from 'zod';
import { checkReadable } from './check-readable.js';
import { ConfigError } from './config-error.js';

/**
 * The link between settlement and the acquirer role (or a real acquirer's adapter) when it is
 * another process: a bearer token both sides hold, and TLS when configured (part of
 * configSchema). DESIGN 121.
 */
export const acquirerLinkSettings = {
  /**
   * The bearer token settlement sends and the acquirer role requires. Or ACQUIRER_TOKEN_FILE.
   * Required with NODE_ENV=production by the acquirer role, and by settlement with ACQUIRER_URL.
   */
  ACQUIRER_TOKEN: z
    .string()
    .regex(/^[\x21-\x7e]{16,4096}$/, {
      message: 'must be 16-4096 visible ASCII characters (no spaces)',
    })
    .optional()
    .describe(
      'Bearer token settlement sends and the `acquirer` role requires (or `ACQUIRER_TOKEN_FILE`); required in production where the link is used.',
    ),
  /** Settlement: a private CA for an `https://` ACQUIRER_URL (the system's CAs otherwise). */
  ACQUIRER_CA_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Settlement: PEM file of the CA that signed the acquirer's certificate, for an `https://` ACQUIRER_URL with a private CA.",
    ),
  /** The acquirer role serves HTTPS when both are set. */
  ACQUIRER_TLS_CERT_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'The `acquirer` role: PEM certificate (chain) file; with ACQUIRER_TLS_KEY_FILE it serves HTTPS.',
    ),
  ACQUIRER_TLS_KEY_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('The `acquirer` role: PEM private key file of ACQUIRER_TLS_CERT_FILE.'),
};

/** The development token of scripts/stack.sh and docker-compose.yml: refused in production. */
export const DEVELOPMENT_ACQUIRER_TOKEN = 'dev-acquirer-token-not-secret';

interface LinkConfig {
  NODE_ENV: string;
  ACQUIRER_URL?: string | undefined;
  ACQUIRER_TOKEN?: string | undefined;
  ACQUIRER_CA_FILE?: string | undefined;
  ACQUIRER_TLS_CERT_FILE?: string | undefined;
  ACQUIRER_TLS_KEY_FILE?: string | undefined;
}

/**
 * The link's settings for the roles a process runs: the token present in production where the
 * link is used, the TLS files readable and paired. Throws a ConfigError naming the setting.
 */
export function checkAcquirerLink(
  config: LinkConfig,
  roles: { calls: boolean; serves: boolean },
  readFile: (path: string) => string,
): void {
  const calls = roles.calls && config.ACQUIRER_URL !== undefined;
  if (config.NODE_ENV === 'production' && (calls || roles.serves)) {
    if (config.ACQUIRER_TOKEN === undefined) {
      const who = roles.serves ? 'the acquirer role' : 'settlement with ACQUIRER_URL';
      throw new ConfigError('ACQUIRER_TOKEN', `must be set for ${who} with NODE_ENV=production`);
    }
    if (config.ACQUIRER_TOKEN === DEVELOPMENT_ACQUIRER_TOKEN) {
      throw new ConfigError(
        'ACQUIRER_TOKEN',
        'is the built-in development token, refused with NODE_ENV=production',
      );
    }
  }
  if (calls && config.ACQUIRER_CA_FILE !== undefined) {
    checkReadable('ACQUIRER_CA_FILE', config.ACQUIRER_CA_FILE, readFile);
  }
  if (roles.serves) {
    const cert = config.ACQUIRER_TLS_CERT_FILE;
    const key = config.ACQUIRER_TLS_KEY_FILE;
    if ((cert === undefined) !== (key === undefined)) {
      const missing = cert === undefined ? 'ACQUIRER_TLS_CERT_FILE' : 'ACQUIRER_TLS_KEY_FILE';
      throw new ConfigError(missing, 'must be set with the other ACQUIRER_TLS_*_FILE');
    }
    if (cert !== undefined) checkReadable('ACQUIRER_TLS_CERT_FILE', cert, readFile);
    if (key !== undefined) checkReadable('ACQUIRER_TLS_KEY_FILE', key, readFile);
  }
}

import { parseArgs } from 'node:util';
import {
  createApiKey,
  listApiKeys,
  revokeApiKey,
  type ApiKeyInfo,
} from '../merchants/api-key-repository.js';
import { parseScopes, READ_ONLY_SCOPES, SCOPES, type Scope } from '../merchants/api-key-scopes.js';
import { isForeignKeyViolation, runCli, UsageError, withPool } from './run-cli.js';

const USAGE = [
  'usage: merchant:key -- create --merchant <merchant id> [--label <label>] [--expires-in-days <n>]',
  '                                [--read-only] [--scopes <scope>,...]',
  '       merchant:key -- list --merchant <merchant id>',
  '       merchant:key -- revoke --key <key id>',
  `scopes: ${SCOPES.join(', ')} (write includes read); --read-only: ${READ_ONLY_SCOPES.join(', ')}`,
].join('\n');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ten years: longer-lived keys should simply not expire. */
const MAX_EXPIRY_DAYS = 3_650;

function toJson(key: ApiKeyInfo): Record<string, unknown> {
  return {
    id: key.id,
    merchant_id: key.merchantId,
    prefix: key.prefix,
    last_four: key.lastFour,
    label: key.label,
    created_at: key.createdAt.toISOString(),
    expires_at: key.expiresAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
    scopes: key.scopes,
  };
}

/**
 * The scopes of a restricted key: `--read-only`'s and `--scopes`'s together (a support tool:
 * `--read-only --scopes refunds:write`); undefined without either (a secret key, every scope).
 */
function requestedScopes(readOnly: boolean, listed: string | undefined): Scope[] | undefined {
  if (!readOnly && listed === undefined) return undefined;
  const named = new Set<Scope>(readOnly ? READ_ONLY_SCOPES : []);
  if (listed !== undefined) {
    const parsed = parseScopes(listed);
    if (!parsed.ok) throw new UsageError(`--scopes: ${parsed.message}`);
    for (const scope of parsed.scopes) named.add(scope);
  }
  return SCOPES.filter((scope) => named.has(scope));
}

/**
 * `npm run merchant:key -- <create|list|revoke> ...`: a merchant's API keys. `create` prints one
 * JSON line with the key's `id` and the secret `api_key`, shown only here: a secret key ("sk_",
 * every scope, `scopes: null`), or with `--read-only` and/or `--scopes` a restricted key ("rk_")
 * that may do only those (DESIGN 115); `list` prints one line per key without secrets, with its
 * scopes; `revoke` prints the revoked key. Running API processes stop accepting a revoked key
 * within AUTH_CACHE_TTL_MS.
 */
async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      merchant: { type: 'string' },
      key: { type: 'string' },
      label: { type: 'string' },
      'expires-in-days': { type: 'string' },
      'read-only': { type: 'boolean' },
      scopes: { type: 'string' },
    },
    strict: true,
  });
  const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
  const [command, ...rest] = positionals;
  if (rest.length > 0) throw new UsageError(USAGE);

  switch (command) {
    case 'create': {
      const merchant = values.merchant;
      if (!merchant || !UUID.test(merchant)) throw new UsageError(USAGE);
      const label = values.label?.trim();
      if (label !== undefined && (label.length < 1 || label.length > 200)) {
        throw new UsageError('--label must be 1-200 characters');
      }
      const days = values['expires-in-days'];
      if (days !== undefined && !(/^\d+$/.test(days) && +days >= 1 && +days <= MAX_EXPIRY_DAYS)) {
        throw new UsageError(`--expires-in-days must be an integer from 1 to ${MAX_EXPIRY_DAYS}`);
      }
      const expiresAt = days === undefined ? undefined : new Date(Date.now() + +days * 86_400_000);
      const scopes = requestedScopes(values['read-only'] === true, values.scopes);
      await withPool('merchant-key', async (pool) => {
        try {
          const key = await createApiKey(pool, merchant, {
            ...(label === undefined ? {} : { label }),
            ...(expiresAt === undefined ? {} : { expiresAt }),
            ...(scopes === undefined ? {} : { scopes }),
          });
          print({ ...toJson(key), api_key: key.apiKey });
        } catch (error) {
          if (isForeignKeyViolation(error)) throw new UsageError(`no merchant ${merchant}`);
          throw error;
        }
      });
      return;
    }
    case 'list': {
      const merchant = values.merchant;
      if (!merchant || !UUID.test(merchant)) throw new UsageError(USAGE);
      await withPool('merchant-key', async (pool) => {
        for (const key of await listApiKeys(pool, merchant)) print(toJson(key));
      });
      return;
    }
    case 'revoke': {
      const keyId = values.key;
      if (!keyId || !UUID.test(keyId)) throw new UsageError(USAGE);
      await withPool('merchant-key', async (pool) => {
        const key = await revokeApiKey(pool, keyId);
        if (!key) throw new UsageError(`no key ${keyId}`);
        print(toJson(key));
      });
      return;
    }
    default:
      throw new UsageError(USAGE);
  }
}

await runCli('merchant:key', USAGE, main);

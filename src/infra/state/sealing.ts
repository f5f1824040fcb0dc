// Secrets at rest: AES-256-GCM with a fresh 12-byte IV per value, and keys derived per purpose from SECRETS_KEY.
// Used for webhook security keys (notify/keys.ts) and approvers' BILL tokens (features/approvals/userLinks.ts).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** A separate 32-byte key per purpose from SECRETS_KEY (HKDF-SHA256), so no key is used for two things. */
export function deriveKey(secretsKey: Buffer, purpose: string): Buffer {
  if (secretsKey.length !== 32) throw new RangeError('SECRETS_KEY must be 32 bytes');
  return Buffer.from(hkdfSync('sha256', secretsKey, 'billbridge', purpose, 32));
}

export type SealedBox = Record<'iv' | 'tag' | 'data', string>;

/** `aad`: data authenticated with the value but not stored in it (e.g. the storage key it belongs under). */
export function sealText(key: Buffer, text: string, aad: string): SealedBox {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(aad));
  const data = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return { iv: iv.toString('base64url'), tag: cipher.getAuthTag().toString('base64url'), data: data.toString('base64url') };
}

/** The sealed text; throws when the key, the AAD or the box is not the one it was sealed with. */
export function openText(key: Buffer, box: SealedBox, aad: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(box.iv, 'base64url')).setAAD(Buffer.from(aad));
  decipher.setAuthTag(Buffer.from(box.tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(box.data, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * SECRETS_KEY as written in the environment: 32 bytes as 64 hex characters or as base64 (either alphabet, padding
 * optional). Anything else, or bytes that do not look random, is refused with a reason that never repeats the value.
 */
export function parseSecretsKey(raw: string): { key: Buffer } | { problem: string } {
  const text = raw.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, 'hex');
  else if (/^[A-Za-z0-9+/]{43}=?$/.test(text)) key = Buffer.from(text, 'base64');
  else if (/^[A-Za-z0-9_-]{43}=?$/.test(text)) key = Buffer.from(text, 'base64url');
  if (key?.length !== 32) {
    return {
      problem:
        'must be exactly 32 bytes written as 64 hex characters or as base64 (43-44 characters); make one with: openssl rand -base64 32',
    };
  }
  const weak = weakness(key);
  if (weak) return { problem: `is not random-looking (${weak}); make one with: openssl rand -base64 32` };
  return { key };
}

/** Why 32 key bytes are not what a random generator gives (each test fails for random bytes with p < 1e-9). */
function weakness(key: Buffer): string | undefined {
  const distinct = new Set(key).size;
  // 32 random bytes have about 30 distinct values; fewer than 16 happens with p < 1e-20.
  if (distinct < 16) return `only ${distinct} distinct byte values`;
  // All printable ASCII: p = (95/256)^32 < 1e-13. A password or a phrase encoded as the key.
  if (key.every((b) => b >= 0x20 && b <= 0x7e)) return 'its bytes are all printable text, like a password';
  // 0,1,2,3... or any fixed step.
  const step = ((key[1] ?? 0) - (key[0] ?? 0) + 256) % 256;
  if (key.every((b, i) => i === 0 || (b - (key[i - 1] ?? 0) + 256) % 256 === step)) return 'its bytes follow a fixed step';
  return undefined;
}

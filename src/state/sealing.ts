// Secrets at rest: AES-256-GCM with a fresh 12-byte IV per value, and keys derived per purpose from SECRETS_KEY.
// Used for webhook security keys (notify/keys.ts) and approvers' BILL tokens (state/userLinks.ts).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** A separate 32-byte key per purpose from SECRETS_KEY (HKDF-SHA256), so no key is used for two things. */
export function deriveKey(secretsKey: Buffer, purpose: string): Buffer {
  if (secretsKey.length !== 32) throw new RangeError('SECRETS_KEY must be 32 bytes');
  return Buffer.from(hkdfSync('sha256', secretsKey, 'billbridge', purpose, 32));
}

export interface SealedBox {
  iv: string;
  tag: string;
  data: string;
}

export interface SealOptions {
  /** How iv, tag and data are written (each store keeps the encoding it was written with). */
  encoding: 'base64' | 'base64url';
  /** Data authenticated with the value but not stored in it (e.g. the storage key it belongs under). */
  aad?: string;
}

export function sealText(key: Buffer, text: string, opts: SealOptions): SealedBox {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (opts.aad !== undefined) cipher.setAAD(Buffer.from(opts.aad));
  const data = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return { iv: iv.toString(opts.encoding), tag: cipher.getAuthTag().toString(opts.encoding), data: data.toString(opts.encoding) };
}

/** The sealed text; throws when the key, the AAD or the box is not the one it was sealed with. */
export function openText(key: Buffer, box: SealedBox, opts: SealOptions): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(box.iv, opts.encoding));
  if (opts.aad !== undefined) decipher.setAAD(Buffer.from(opts.aad));
  decipher.setAuthTag(Buffer.from(box.tag, opts.encoding));
  return Buffer.concat([decipher.update(Buffer.from(box.data, opts.encoding)), decipher.final()]).toString('utf8');
}

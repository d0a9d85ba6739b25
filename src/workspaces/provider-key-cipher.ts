import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { EncryptedSecret } from '../store/database.ts';
import { MASTER_KEY_BYTES } from '../store/master-key.ts';

/**
 * Encrypts provider API keys at rest: AES-256-GCM under a key derived from the master key with HKDF-SHA256
 * (info `hearth/provider-key/v1`, so the master key can serve other purposes later without reuse), a fresh
 * 96-bit IV per encryption, and the record's `context` (e.g. the project id) as associated data: an
 * envelope moved to another record, or read with another master key, does not decrypt. Stateless after
 * construction; safe to share.
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;
const INFO = 'hearth/provider-key/v1';

/** The last four characters of a secret: all the API ever shows of it. */
export function lastFour(secret: string): string {
  return secret.length <= 4 ? secret.replace(/./g, '*') : secret.slice(-4);
}

export class ProviderKeyCipher {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== MASTER_KEY_BYTES) throw new TypeError(`the master key must be ${MASTER_KEY_BYTES} bytes`);
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), INFO, 32));
  }

  encrypt(plaintext: string, context: string): EncryptedSecret {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return {
      v: 1,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
      last4: lastFour(plaintext),
    };
  }

  /** The plaintext, or null when the envelope is unreadable (other master key, other context, tampered, malformed). */
  decrypt(envelope: EncryptedSecret | null | undefined, context: string): string | null {
    if (!envelope || envelope.v !== 1) return null;
    try {
      const iv = Buffer.from(envelope.iv, 'base64');
      const tag = Buffer.from(envelope.tag, 'base64');
      if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) return null;
      const decipher = createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(Buffer.from(envelope.data, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}

import { describe, expect, it } from 'vitest';
import { kraftClusterId } from '../support/private-kafka.js';

describe('kraftClusterId', () => {
  it('never starts with "-" (StorageTool would read it as an option) and is 16 bytes of base64url', () => {
    for (let i = 0; i < 5_000; i += 1) {
      const id = kraftClusterId();
      expect(id.startsWith('-')).toBe(false);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
    }
  });
});

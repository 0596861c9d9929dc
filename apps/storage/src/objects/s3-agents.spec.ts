import { describe, expect, it } from 'vitest';
import { s3AgentsOf } from './s3-object.client';

describe('s3AgentsOf: the connections to S3', () => {
  it('caps and keeps alive the connections of an https endpoint as of an http one', () => {
    const { httpAgent, httpsAgent } = s3AgentsOf({ S3_MAX_SOCKETS: 7 });
    for (const agent of [httpAgent, httpsAgent]) {
      expect(agent.maxSockets).toBe(7);
      expect((agent as unknown as { keepAlive: boolean }).keepAlive).toBe(true);
    }
    expect((httpsAgent as unknown as { protocol: string }).protocol).toBe('https:');
    httpAgent.destroy();
    httpsAgent.destroy();
  });
});

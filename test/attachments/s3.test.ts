// The attachment store on S3: the AWS SDK against s3rver, a local S3-compatible server.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { buildTestApp, createStaff } from '../helpers.js';
import { fetchLink, pdf, upload } from './files.js';

async function s3(t: TestContext) {
  const dir = mkdtempSync(join(tmpdir(), 'gma-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory: dir,
    silent: true,
    configureBuckets: [{ name: 'media' }],
  });
  const { port } = await server.run();
  t.after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    env: {
      ATTACHMENTS_STORE: `s3://media?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&forcePathStyle=true`,
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
    },
  };
}

// s3rver predates the SDK's default CRC checksums: ask for them only where S3 requires them.
process.env.AWS_REQUEST_CHECKSUM_CALCULATION = 'WHEN_REQUIRED';
process.env.AWS_RESPONSE_CHECKSUM_VALIDATION = 'WHEN_REQUIRED';

test('with an s3:// store, an upload is an object named by its digest and its link serves it', async (t) => {
  const { endpoint, env } = await s3(t);
  const app = await buildTestApp(t, env);
  const staff = await createStaff(app, 'staff');
  const bytes = pdf();
  const res = await upload(app, staff.token, bytes, 'folio.pdf', 'application/pdf');
  assert.equal(res.status, 201, res.raw.body);
  assert.equal(res.data.contentType, 'application/pdf');
  const again = await upload(app, staff.token, bytes, 'folio-copy.pdf');
  assert.equal(again.status, 201, again.raw.body);

  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  t.after(() => client.destroy());
  const object = await client.send(new GetObjectCommand({ Bucket: 'media', Key: `sha256/${res.data.sha256}` }));
  assert.deepEqual(Buffer.from(await object.Body!.transformToByteArray()), bytes);

  const got = await fetchLink(app, again.data.url);
  assert.equal(got.statusCode, 200);
  assert.deepEqual(got.rawPayload, bytes);
  assert.equal(got.headers['content-type'], 'application/pdf');
  assert.match(String(got.headers['content-disposition']), /^inline; filename="folio-copy.pdf"/);
});

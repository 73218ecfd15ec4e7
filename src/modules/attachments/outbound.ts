// Owns handing a message's stored files to the channel dispatcher: each with its signed link
// (Twilio and WhatsApp fetch it) and a way to read its bytes (e-mail attaches them).
import type { Readable } from 'node:stream';
import type { Executor } from '../../db/types.js';
import type { OutboundFiles, OutgoingFile } from '../channels/providers.js';
import { attachmentsOfMessages } from './repository.js';
import type { AttachmentDeps } from './service.js';

export function outboundFiles(deps: AttachmentDeps): OutboundFiles {
  return {
    async of(db: Executor, messageId: string): Promise<OutgoingFile[]> {
      const rows = await attachmentsOfMessages(db, [messageId]);
      return rows
        .filter((r) => r.status === 'stored' && r.sha256 !== null)
        .map((r) => ({
          id: r.id,
          filename: r.filename,
          contentType: r.content_type ?? 'application/octet-stream',
          url: deps.signer.url(r.id),
          async open(): Promise<Readable> {
            const blob = await deps.blobs.get(r.sha256!);
            if (blob === null) throw new Error(`the content of attachment ${r.id} is missing from the store`);
            return blob.body;
          },
        }));
    },
  };
}

// Owns one SMTP session per e-mail sent: its own connection (TLS as SMTP_URL says), the login, the
// envelope and the message, closed when the send ends, so a send that is given up on leaves no
// session behind that could still deliver it (and the send, holding its dispatcher slot, lasts
// until the socket is closed). Until the message is transmitted the session is bounded by the
// send timeout: cut off then, the server never got the end of the message, so it may be sent
// again. Once it is transmitted the server's answer is waited for (RFC 5321 §4.5.3.2.6 allows 10
// minutes); a session that ends without one may have delivered it, and is never sent again.
import { Readable } from 'node:stream';
import MailComposer from 'nodemailer/lib/mail-composer';
import { parseConnectionUrl } from 'nodemailer/lib/shared';
import SMTPConnection from 'nodemailer/lib/smtp-connection';

export interface SmtpMail {
  from: string;
  to: string;
  subject: string;
  text: string;
  messageId: string;
  inReplyTo?: string;
  references?: string[];
  headers?: Record<string, string>;
  /** Files attached to the e-mail, read as the message is composed. */
  attachments?: { filename: string; contentType: string; content: Readable }[];
}

export interface SmtpTimeouts {
  /** The session until the message is transmitted. */
  sendTimeoutMs: number;
  /** The wait for the server's answer once it is. */
  answerTimeoutMs: number;
}

export type SmtpOutcome = { ok: true } | { ok: false; retryable: boolean; code: string; message: string };

/** Nothing the server acknowledged: whatever ended the session, the message may be sent again. */
const retry = (code: string, message: string): SmtpOutcome => ({ ok: false, retryable: true, code, message });

/** The message went out and no answer came: it may have been delivered, so it is not sent again. */
const noAnswer = (why: string): SmtpOutcome => ({
  ok: false,
  retryable: false,
  code: 'SMTP_NO_ANSWER',
  message:
    `the message was transmitted but ${why}: it may have been delivered, so it is not sent again ` +
    '(POST …/retry sends it anew)',
});

function compose(mail: SmtpMail): Promise<{ raw: Buffer; envelope: { from: string; to: string[] } }> {
  const node = new MailComposer(mail).compile();
  const e = node.getEnvelope();
  const envelope = { from: typeof e.from === 'string' ? e.from : '', to: e.to.map(String) };
  return new Promise((resolve, reject) => node.build((err, raw) => (err ? reject(err) : resolve({ raw, envelope }))));
}

/**
 * Sends `mail` over a session of its own to the server `url` names. `signal` asks the session to
 * end early (the instance is stopping, or its lease on the text could not be renewed): at once
 * before the message is transmitted; after, the answer is still waited for, at most a send timeout.
 */
export async function sendSmtp(
  url: string,
  mail: SmtpMail,
  t: SmtpTimeouts,
  signal: AbortSignal,
): Promise<SmtpOutcome> {
  const { raw, envelope } = await compose(mail);
  const { auth, ...target } = parseConnectionUrl(url);
  return new Promise<SmtpOutcome>((resolve) => {
    const conn = new SMTPConnection({
      ...target,
      connectionTimeout: t.sendTimeoutMs,
      greetingTimeout: t.sendTimeoutMs,
      dnsTimeout: t.sendTimeoutMs,
      // Our deadlines below end the session; this only stops a socket silent for longer than both.
      socketTimeout: t.sendTimeoutMs + t.answerTimeoutMs,
      // Closing destroys the socket at once rather than waiting for the server to close its side.
      socketCloseTimeout: 0,
      logger: false,
    });
    let transmitted = false;
    let settled = false;
    let deadline: NodeJS.Timeout | undefined;
    let deadlineAt = 0;
    const endIn = (ms: number) => {
      clearTimeout(deadline);
      deadlineAt = Date.now() + ms;
      deadline = setTimeout(expire, ms);
    };
    const finish = (outcome: SmtpOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      signal.removeEventListener('abort', onAbort);
      conn.close();
      resolve(outcome);
    };
    const expire = () =>
      finish(
        transmitted
          ? noAnswer(`no answer came within ${t.answerTimeoutMs} ms`)
          : retry('SMTP_TIMEOUT', `the SMTP session did not reach the end of the message within ${t.sendTimeoutMs} ms`),
      );
    const onAbort = () => {
      if (!transmitted) finish(retry('SMTP_INTERRUPTED', 'the session was ended before the message was transmitted'));
      else if (deadlineAt - Date.now() > t.sendTimeoutMs) endIn(t.sendTimeoutMs);
    };
    const failed = (err: unknown) => {
      const e = err as { responseCode?: number; response?: string; message?: string };
      // An answer from the server decides, before or after the message: 4xx is a temporary refusal
      // (greylisting, a full mailbox), 5xx a final one.
      if (typeof e.responseCode === 'number') {
        const reason = (e.response ?? e.message ?? 'refused').slice(0, 2000);
        return finish({ ok: false, retryable: e.responseCode < 500, code: `SMTP_${e.responseCode}`, message: reason });
      }
      const why = e.message ?? String(err);
      finish(transmitted ? noAnswer(`the session ended first (${why})`) : retry('SMTP_UNREACHABLE', why));
    };
    endIn(t.sendTimeoutMs);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    // Kept for the connection's life (`failed` acts once): an 'error' nobody listens to would throw.
    conn.on('error', failed);
    conn.on('end', () => failed(new Error('the connection was closed')));
    const send = () => {
      // Read only once the server accepted DATA: the end of this stream is the end of the message
      // handed to the connection (the terminating dot follows it at once).
      const message = new Readable({
        read() {
          this.push(raw);
          this.push(null);
        },
      });
      message.once('end', () => {
        transmitted = true;
        endIn(t.answerTimeoutMs);
      });
      conn.send(envelope, message, (err) => (err ? failed(err) : finish({ ok: true })));
    };
    conn.connect((err?: Error) => {
      if (err) return failed(err);
      if (auth === undefined || !conn.allowsAuth) return send();
      conn.login(auth, (e?: Error | null) => (e ? failed(e) : send()));
    });
  });
}

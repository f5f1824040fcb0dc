// Reading an upstream HTTP answer (BILL, Graph) as text up to a cap: an answer of any size is never buffered whole.

/** The body as text (UTF-8, as undici's text()), or undefined (the rest discarded) once it passes maxBytes. */
export async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  length: string | string[] | undefined,
  maxBytes: number,
): Promise<string | undefined> {
  if (Number(length) > maxBytes) {
    body.destroy();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

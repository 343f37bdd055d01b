/**
 * The UTF-8 byte length of a string without encoding it. Lone surrogates count as U+FFFD (3 bytes),
 * as TextEncoder writes them; JSON.stringify escapes them, so JSON text never has one.
 */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

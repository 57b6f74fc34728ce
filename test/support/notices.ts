/**
 * A notice's text as the chat shows it, less the severity mark each platform
 * puts in front (adapters/<platform>/format.ts *_NOTICE_MARKS: an emoji, and
 * "Error:" or "Warning:" in the platform's emphasis), so a test about what a
 * notice says reads the same on every platform.
 */
const MARK = /^(?:❌|⚠️|✅|:x:|:warning:|:white_check_mark:)\s+(?:[*_]{0,2}(?:Error|Warning):[*_]{0,2}\s*)?/u;

export const unmarked = (text: string): string => text.replace(MARK, "");

/**
 * What the CLI writes to a terminal: names, emails and app log lines are other people's text (any key holder
 * names a key; an app prints what it likes), and a control character in them would drive the operator's
 * terminal (ESC sequences: colours, cursor moves, window titles, OSC 8 links; a carriage return hiding what came
 * before) or reorder what is shown (bidi overrides). They are written as `\uXXXX` instead: visible, and inside a
 * JSON string (--json) the same value as before. Tab and newline stay, as the CLI's own layout uses them.
 */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

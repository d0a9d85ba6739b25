/**
 * .gitignore-style exclude rules for packing an app directory: `#` comments, `!` negation (last match wins),
 * a leading or inner `/` anchors a pattern to the directory, a trailing `/` matches directories only, `*`
 * and `?` stay within one path component, `**` spans components. `node_modules` and `.git` are always
 * excluded, whatever the rules say. Pure.
 */
interface Rule {
  regex: RegExp;
  negate: boolean;
  dirOnly: boolean;
}

export const ALWAYS_EXCLUDED = ['node_modules', '.git'] as const;

function globToRegex(glob: string, anchored: boolean): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slashAfter = glob[i + 2] === '/';
        re += slashAfter ? '(?:.*/)?' : '.*';
        i += slashAfter ? 2 : 1;
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end === -1) re += '\\[';
      else {
        re += `[${glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '\\' && i + 1 < glob.length) re += `\\${glob[++i]}`;
    else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${anchored ? '' : '(?:.*/)?'}${re}(?:/.*)?$`);
}

export function parseIgnoreRules(text: string): Rule[] {
  const rules: Rule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.replace(/(?<!\\)\s+$/, '');
    if (line === '' || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1);
    const dirOnly = line.endsWith('/');
    if (dirOnly) line = line.slice(0, -1);
    const anchored = line.includes('/');
    if (line.startsWith('/')) line = line.slice(1);
    if (line === '') continue;
    rules.push({ regex: globToRegex(line, anchored), negate, dirOnly });
  }
  return rules;
}

/** Whether `relPath` (posix, relative to the packed directory) is excluded. */
export function isIgnored(rules: readonly Rule[], relPath: string, isDirectory: boolean): boolean {
  const parts = relPath.split('/');
  if (parts.some((p) => (ALWAYS_EXCLUDED as readonly string[]).includes(p))) return true;
  let ignored = false;
  for (const rule of rules) {
    // A directory-only rule matches a file through one of its ancestors (every ancestor is a directory).
    const target = rule.dirOnly && !isDirectory ? parts.slice(0, -1).join('/') : relPath;
    if (target !== '' && rule.regex.test(target)) ignored = !rule.negate;
  }
  return ignored;
}

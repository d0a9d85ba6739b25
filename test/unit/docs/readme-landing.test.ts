import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The README is the user's landing page: short enough to read in ten minutes, with the two quick-start commands
 * CI runs, and every relative link of the README and docs/ pointing at a file (and heading) that exists.
 */
const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
/** About 400 lines (a ten-minute read), with room for the configuration table to grow by a setting or two. */
const README_MAX_LINES = 400;

/** GitHub's anchor for a heading: lower case, punctuation other than '-' dropped, spaces as '-'. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
const anchorsOf = (text: string) => new Set([...text.matchAll(/^#+\s+(.*)$/gm)].map((m) => anchorOf(m[1] ?? '')));
/** Relative link targets outside code blocks. */
const linksOf = (text: string) =>
  [...text.replace(/```[\s\S]*?```/g, '').matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] ?? '')
    .filter((t) => !/^(https?|mailto):/.test(t));

const documents = [
  'README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('README as the landing page', () => {
  const readme = read('README.md');

  it(`is at most ${README_MAX_LINES} lines`, () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('starts with the two quick-start commands: one serves the default model, one runs the tests', () => {
    expect(readme).toMatch(/^npm ci && npm start\s+#/m);
    expect(readme).toMatch(/^npm test\s+#/m);
  });

  it('links docs/architecture.md', () => {
    expect(linksOf(readme)).toContain('docs/architecture.md');
  });

  it.each(documents)('%s: cites no file a user of the repository does not have (design notes, shared/)', (doc) => {
    const text = read(doc);
    expect(text).not.toMatch(/contract\.md|service-spec|\bshared\/(design|models)|\.\.\/shared/);
  });

  it.each(documents)('%s: every relative link resolves', (doc) => {
    const text = read(doc);
    for (const link of linksOf(text)) {
      const [target = '', anchor] = link.split('#');
      const file = target === '' ? doc : path.normalize(path.join(path.dirname(doc), target));
      expect(fs.existsSync(path.join(ROOT, file)), `${doc} -> ${link}`).toBe(true);
      if (anchor && file.endsWith('.md')) expect(anchorsOf(read(file)).has(anchor), `${doc} -> ${link}`).toBe(true);
    }
  });
});

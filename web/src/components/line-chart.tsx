import { niceMax } from './chart-scale.ts';

/**
 * A small hand-written SVG line chart: fixed view box, one polyline per series, a zero-based y axis with
 * its maximum labelled, and an accessible summary of the latest values (role img). Pure rendering.
 */
export interface Series {
  label: string;
  /** CSS class giving the stroke colour (see styles.css `.series-*`). */
  tone: string;
  /** One value per sample; null where the figure did not exist (no requests yet). */
  values: Array<number | null>;
}

const W = 320;
const H = 120;
const PAD = { top: 8, right: 8, bottom: 16, left: 36 };

export function LineChart({
  title,
  unit,
  series,
  capacity,
  format,
}: {
  title: string;
  unit: string;
  series: Series[];
  capacity: number;
  format: (v: number) => string;
}) {
  const all = series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v)));
  const max = niceMax(all.length ? Math.max(...all) : 0);
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (capacity <= 1 ? innerW : (i * innerW) / (capacity - 1));
  const y = (v: number) => PAD.top + innerH - (max === 0 ? 0 : (v / max) * innerH);
  const latest = series.map((s) => {
    const v = [...s.values].reverse().find((n) => n !== null);
    return `${s.label} ${v === undefined || v === null ? 'no data' : `${format(v)} ${unit}`}`;
  });
  return (
    <figure class="chart">
      <figcaption>
        <span class="chart-title">{title}</span>
        <span class="chart-legend">
          {series.map((s) => (
            <span key={s.label} class={`legend ${s.tone}`}>
              {s.label} <strong>{latestText(s.values, format)}</strong>
            </span>
          ))}
        </span>
      </figcaption>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`${title}: ${latest.join(', ')}`}
        preserveAspectRatio="none"
      >
        <line class="axis" x1={PAD.left} y1={PAD.top + innerH} x2={W - PAD.right} y2={PAD.top + innerH} />
        <line class="grid" x1={PAD.left} y1={PAD.top} x2={W - PAD.right} y2={PAD.top} />
        <line class="grid" x1={PAD.left} y1={PAD.top + innerH / 2} x2={W - PAD.right} y2={PAD.top + innerH / 2} />
        <text class="tick" x={PAD.left - 4} y={PAD.top + 4} text-anchor="end">
          {format(max)}
        </text>
        <text class="tick" x={PAD.left - 4} y={PAD.top + innerH + 4} text-anchor="end">
          0
        </text>
        <text class="tick" x={W - PAD.right} y={H - 2} text-anchor="end">
          now
        </text>
        {series.map((s) => {
          // Samples are right-aligned: the newest is at the right edge.
          const offset = capacity - s.values.length;
          const segments: string[][] = [[]];
          s.values.forEach((v, i) => {
            if (v === null || !Number.isFinite(v)) segments.push([]);
            else segments[segments.length - 1]!.push(`${x(offset + i).toFixed(1)},${y(v).toFixed(1)}`);
          });
          return segments
            .filter((seg) => seg.length > 0)
            .map((seg, k) =>
              seg.length === 1 ? (
                <circle
                  key={`${s.label}${k}`}
                  class={`dot ${s.tone}`}
                  cx={seg[0]!.split(',')[0]}
                  cy={seg[0]!.split(',')[1]}
                  r="2"
                />
              ) : (
                <polyline key={`${s.label}${k}`} class={`line ${s.tone}`} points={seg.join(' ')} />
              ),
            );
        })}
      </svg>
    </figure>
  );
}

function latestText(values: Array<number | null>, format: (v: number) => string): string {
  const v = [...values].reverse().find((n) => n !== null);
  return v === undefined || v === null ? '—' : format(v);
}

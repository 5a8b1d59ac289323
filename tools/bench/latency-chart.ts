/** One line of the chart: latency (ms) at each offered rate (per second). */
export interface ChartSeries {
  name: string;
  color: string;
  points: readonly { x: number; y: number }[];
}

export interface ChartMarker {
  value: number;
  label: string;
}

export interface ChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Horizontal lines: latency targets. */
  targets?: readonly ChartMarker[];
  /** Vertical lines: rates of interest (half the peak, the 500/s of the targets). */
  rates?: readonly ChartMarker[];
}

const WIDTH = 900;
const HEIGHT = 520;
const MARGIN = { left: 70, right: 30, top: 50, bottom: 60 };
const PLOT_W = WIDTH - MARGIN.left - MARGIN.right;
const PLOT_H = HEIGHT - MARGIN.top - MARGIN.bottom;

/**
 * A latency-versus-rate chart as a standalone SVG document: linear rate axis, logarithmic
 * latency axis (latencies span 1 ms to seconds once a queue forms), one polyline per series,
 * dashed target lines. Written by hand so the benchmark needs no charting package and no network.
 */
export function renderLatencyChart(series: readonly ChartSeries[], options: ChartOptions): string {
  const points = series.flatMap((s) => s.points).filter((p) => p.y > 0);
  const targets = options.targets ?? [];
  const rates = options.rates ?? [];
  const xMax = niceCeiling(Math.max(1, ...points.map((p) => p.x), ...rates.map((r) => r.value)));
  const yValues = [...points.map((p) => p.y), ...targets.map((t) => t.value)];
  const yMin = 10 ** Math.floor(Math.log10(Math.max(0.1, Math.min(...yValues, 1))));
  const yMax = 10 ** Math.ceil(Math.log10(Math.max(10, ...yValues)));
  const x = (value: number) => MARGIN.left + (value / xMax) * PLOT_W;
  const y = (value: number) =>
    MARGIN.top +
    PLOT_H -
    ((Math.log10(Math.max(value, yMin)) - Math.log10(yMin)) /
      (Math.log10(yMax) - Math.log10(yMin))) *
      PLOT_H;

  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-size="16">${escape(options.title)}</text>`,
  ];
  // Grid and axes: rate ticks at fifths, latency ticks at each power of ten (1-2-5 in between).
  for (let i = 0; i <= 5; i++) {
    const value = (xMax * i) / 5;
    parts.push(
      line(x(value), MARGIN.top, x(value), MARGIN.top + PLOT_H, '#e5e5e5'),
      text(x(value), MARGIN.top + PLOT_H + 18, formatNumber(value), 'middle'),
    );
  }
  for (let decade = yMin; decade < yMax * 1.001; decade *= 10) {
    for (const step of [1, 2, 5]) {
      const value = decade * step;
      if (value > yMax * 1.001) break;
      parts.push(line(MARGIN.left, y(value), MARGIN.left + PLOT_W, y(value), '#e5e5e5'));
      parts.push(text(MARGIN.left - 8, y(value) + 4, formatNumber(value), 'end'));
    }
  }
  parts.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${PLOT_W}" height="${PLOT_H}" fill="none" stroke="#333"/>`,
    text(MARGIN.left + PLOT_W / 2, HEIGHT - 18, options.xLabel, 'middle'),
    `<text transform="translate(18 ${MARGIN.top + PLOT_H / 2}) rotate(-90)" text-anchor="middle">${escape(options.yLabel)}</text>`,
  );
  for (const target of targets) {
    parts.push(
      line(MARGIN.left, y(target.value), MARGIN.left + PLOT_W, y(target.value), '#c00', '6 4'),
      text(MARGIN.left + PLOT_W - 4, y(target.value) - 4, target.label, 'end', '#c00'),
    );
  }
  // Labels of the rate lines stacked from the bottom, so neighbouring lines do not overprint.
  rates.forEach((rate, i) => {
    parts.push(
      line(x(rate.value), MARGIN.top, x(rate.value), MARGIN.top + PLOT_H, '#888', '2 4'),
      text(x(rate.value) + 4, MARGIN.top + PLOT_H - 8 - i * 16, rate.label, 'start', '#555'),
    );
  });
  for (const s of series) {
    const visible = s.points.filter((p) => p.y > 0);
    const path = visible.map((p) => `${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`).join(' ');
    parts.push(
      `<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="2"/>`,
      ...visible.map(
        (p) =>
          `<circle cx="${x(p.x).toFixed(1)}" cy="${y(p.y).toFixed(1)}" r="3" fill="${s.color}"/>`,
      ),
    );
  }
  series.forEach((s, i) => {
    const top = MARGIN.top + 12 + i * 18;
    parts.push(
      line(MARGIN.left + 12, top, MARGIN.left + 36, top, s.color, undefined, 3),
      text(MARGIN.left + 42, top + 4, s.name, 'start'),
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function line(
  x1: number,
  y1: number,
  x2: number,
  y2: number,
  color: string,
  dash?: string,
  width = 1,
): string {
  const dashed = dash ? ` stroke-dasharray="${dash}"` : '';
  return `<line x1="${x1.toFixed(1)}" y1="${y1.toFixed(1)}" x2="${x2.toFixed(1)}" y2="${y2.toFixed(1)}" stroke="${color}" stroke-width="${width}"${dashed}/>`;
}

function text(x: number, y: number, content: string, anchor: string, color = '#222'): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" text-anchor="${anchor}" fill="${color}">${escape(content)}</text>`;
}

/** The next of 1, 1.5, 2, 2.5, 5 x 10^n at or above `value`: round axis ends. */
function niceCeiling(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 1.5, 2, 2.5, 5, 10])
    if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

function formatNumber(value: number): string {
  if (value >= 1000) return `${Math.round(value / 100) / 10}k`.replace('.0k', 'k');
  return String(Math.round(value * 100) / 100);
}

function escape(value: string): string {
  return value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

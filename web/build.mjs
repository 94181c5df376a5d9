// Bundles the page: src/main.js (and the CSS it imports, uPlot's included) into
// OUT/assets/app.js and OUT/assets/app.css, and copies src/index.html to OUT/index.html.
// OUT: --outdir DIR, else $LOOM_WEB_OUT, else ./dist. cmake/WebAssets.cmake passes the build
// tree's folder, so that a build never writes into the source tree.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const out = resolve(flag('--outdir') ?? process.env.LOOM_WEB_OUT ?? join(here, 'dist'));
const watch = args.includes('--watch');

rmSync(join(out, 'assets'), { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });
copyFileSync(join(here, 'src', 'index.html'), join(out, 'index.html'));

const options = {
  entryPoints: { app: join(here, 'src', 'main.js') },
  outdir: join(out, 'assets'),
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
  console.log(`watching; writing ${out}`);
} else {
  const result = await esbuild.build(options);
  const sizes = Object.entries(result.metafile.outputs).map(([f, o]) => `${f.split('/').pop()} ${(o.bytes / 1024).toFixed(1)} KiB`);
  console.log(`web: ${out}: index.html, ${sizes.join(', ')}`);
}

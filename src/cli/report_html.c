/* The self-contained HTML report of `reprocl check --report`: the same tables as the terminal, a
 * histogram of native-mode ulp differences per device (inline SVG), and difference images for grid
 * outputs (inline BMP data URIs). No external files, scripts or fonts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

static void html_escape(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static void base64(FILE *f, const unsigned char *d, size_t n) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
    fputc(t[v >> 18 & 63], f);
    fputc(t[v >> 12 & 63], f);
    fputc(i + 1 < n ? t[v >> 6 & 63] : '=', f);
    fputc(i + 2 < n ? t[v & 63] : '=', f);
  }
}

/* A 24-bit BMP of the difference mask: differing values red, equal ones light grey; row 0 at the top. */
static void diff_image(FILE *f, json_t *diff) {
  size_t w = (size_t)json_integer_value(json_object_get(diff, "width"));
  size_t h = (size_t)json_integer_value(json_object_get(diff, "height"));
  const char *m = str(diff, "mask");
  if (!w || !h || strlen(m) != w * h || w > 8192 || h > 8192) return;
  size_t row = (w * 3 + 3) & ~(size_t)3, size = 54 + row * h;
  unsigned char *b = calloc(1, size);
  if (!b) return;
  unsigned char hdr[54] = {'B', 'M'};
  uint32_t v32[] = {(uint32_t)size, 0, 54, 40, (uint32_t)w, (uint32_t)-(int32_t)h};
  memcpy(hdr + 2, &v32[0], 4);
  memcpy(hdr + 10, &v32[2], 4);
  memcpy(hdr + 14, &v32[3], 4);
  memcpy(hdr + 18, &v32[4], 4);
  memcpy(hdr + 22, &v32[5], 4); /* negative height: top-down rows */
  hdr[26] = 1;
  hdr[28] = 24;
  memcpy(b, hdr, 54);
  for (size_t y = 0; y < h; y++)
    for (size_t x = 0; x < w; x++) {
      unsigned char *p = b + 54 + y * row + 3 * x;
      int on = m[y * w + x] == '1';
      p[0] = on ? 0x20 : 0xe8; /* B G R */
      p[1] = on ? 0x20 : 0xe8;
      p[2] = on ? 0xe0 : 0xe8;
    }
  fprintf(f, "<img class=\"diff\" alt=\"difference image\" width=\"%zu\" height=\"%zu\" src=\"data:image/bmp;base64,",
          w > 256 ? 256 : w, w > 256 ? h * 256 / w : h);
  base64(f, b, size);
  fputs("\">", f);
  free(b);
}

/* A bar chart of a log2 ulp histogram (bins as in suite_ulp_histogram), as inline SVG. */
static void histogram_svg(FILE *f, const double *bins, const char *title) {
  double max = 0;
  int last = 0;
  for (int i = 1; i < SUITE_ULP_BINS; i++) {
    if (bins[i] > max) max = bins[i];
    if (bins[i] > 0) last = i;
  }
  const int bw = 14, h = 120, n = last < 8 ? 8 : last + 1;
  fprintf(f, "<figure><svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"", n * bw + 50, h + 40);
  html_escape(f, title);
  fprintf(f, "\"><line x1=\"40\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>", h, 40 + n * bw, h);
  for (int i = 1; i < n; i++) {
    double frac = max > 0 ? bins[i] / max : 0;
    int bh = (int)(frac * (h - 10));
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>", 40 + i * bw, h - bh, bw - 2, bh,
            i == SUITE_ULP_BINS - 1 ? "#a00" : "#36c");
    if (i == SUITE_ULP_BINS - 1) fprintf(f, "inf/NaN: %.0f values", bins[i]);
    else fprintf(f, "%.0f-%.0f ulp: %.0f values", i == 1 ? 1.0 : (double)(1ull << (i - 1)), (double)(1ull << i) - 1, bins[i]);
    fputs("</title></rect>", f);
    if (i % 4 == 1) fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\">2^%d</text>", 40 + i * bw, h + 12, i - 1);
  }
  fprintf(f, "<text x=\"0\" y=\"10\" font-size=\"10\">%.0f</text><text x=\"40\" y=\"%d\" font-size=\"10\">ulp difference "
             "(log2 bins)</text></svg><figcaption>",
          max, h + 30);
  html_escape(f, title);
  fputs("</figcaption></figure>", f);
}

/* The page's head and style, the summary line and the list of devices. */
static void html_head(FILE *f, json_t *doc, json_t *devs) {
  size_t i;
  json_t *d;
  fputs("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>reprocl check</title><style>"
        "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}th{background:#eee}td.ok{background:#e6f4e6}"
        "td.bad{background:#f9d6d6;font-weight:bold}td.na{color:#999}code{font-size:11px}"
        "figure{display:inline-block;margin:0 1em 1em 0}img.diff{image-rendering:pixelated;border:1px solid #999}"
        "</style></head><body>\n<h1>reprocl check</h1>\n",
        f);
  int mism = (int)json_integer_value(json_object_get(doc, "mismatches"));
  fprintf(f,
          "<p>reprocl %s, %s suite, %s on %s. <strong>%s</strong>: %d reproducible result(s) differ from the host "
          "reference.</p>\n<h2>Devices</h2><ol start=\"0\">",
          str(doc, "reprocl"), str(doc, "suite"), str(doc, "created"), str(doc, "host"), mism ? "DISAGREE" : "AGREE",
          mism);
  json_array_foreach(devs, i, d) {
    fputs("<li>", f);
    html_escape(f, str(d, "name"));
    fputs(" — driver ", f);
    html_escape(f, str(d, "driver_version"));
    fputs("</li>", f);
  }
}

/* One case's row of the reproducible table: its digest per device against the reference, or why not run. */
static void html_repro_row(FILE *f, json_t *c, size_t nd) {
  fputs("<tr><td>", f);
  html_escape(f, str(c, "name"));
  fputs("</td><td>", f);
  html_escape(f, str(c, "contract"));
  if (strcmp(str(c, "status"), "ok")) {
    fprintf(f, "</td><td colspan=\"%zu\" class=\"na\">%s: ", nd + 1, str(c, "status"));
    html_escape(f, str(c, "reason"));
    fputs("</td></tr>\n", f);
    return;
  }
  fprintf(f, "</td><td><code>%.8s</code></td>", str(c, "reference"));
  size_t k;
  json_t *r;
  json_array_foreach(json_object_get(c, "results"), k, r) {
    if (!strcmp(str(r, "status"), "ok"))
      fprintf(f, "<td class=\"%s\"><code>%.8s</code> %s</td>",
              json_is_true(json_object_get(r, "agrees")) ? "ok" : "bad", str(r, "sha256"),
              json_is_true(json_object_get(r, "agrees")) ? "&#10003;" : "&#10007;");
    else {
      fprintf(f, "<td class=\"%s\" title=\"", !strcmp(str(r, "status"), "unsupported") ? "na" : "bad");
      html_escape(f, str(r, "reason"));
      fprintf(f, "\">%s</td>", !strcmp(str(r, "status"), "unsupported") ? "n/a" : "error");
    }
  }
  fputs("</tr>\n", f);
}

typedef double ulp_bins[SUITE_ULP_BINS];

/* The per-device sums of the native ulp histograms of every case (NULL when out of memory); *any_native
 * set where some case ran natively. */
static ulp_bins *native_histograms(json_t *cases, size_t nd, int *any_native) {
  size_t i;
  json_t *c;
  ulp_bins *hist = calloc(nd ? nd : 1, sizeof *hist);
  json_array_foreach(cases, i, c) {
    size_t k;
    json_t *r;
    json_array_foreach(json_object_get(c, "results"), k, r) {
      json_t *n = json_object_get(r, "native");
      if (!n || strcmp(str(n, "status"), "ok") || k >= nd || !hist) continue;
      *any_native = 1;
      size_t b;
      json_t *v;
      json_array_foreach(json_object_get(n, "ulp_histogram"), b, v) if (b < SUITE_ULP_BINS) hist[k][b] +=
          (double)json_integer_value(v);
    }
  }
  return hist;
}

/* One device's cell of the native table: values differing from the reproducible result, the largest
 * differences, the difference image. */
static void html_native_cell(FILE *f, json_t *r) {
  json_t *n = json_object_get(r, "native"), *dr = n ? json_object_get(n, "drift") : NULL;
  if (!dr) {
    fputs("<td class=\"na\">n/a</td>", f);
    return;
  }
  json_int_t diff = json_integer_value(json_object_get(dr, "differing"));
  if (!diff) {
    fputs("<td>same bits</td>", f);
    return;
  }
  json_t *u = json_object_get(dr, "max_ulp"), *rel = json_object_get(dr, "max_rel");
  fprintf(f, "<td>%lld / ", (long long)diff);
  if (json_is_number(u))
    fprintf(f, "%.3g", json_number_value(u));
  else
    html_escape(f, json_string_value(u));
  fputs(" / ", f);
  if (json_is_number(rel))
    fprintf(f, "%.2e", json_number_value(rel));
  else
    html_escape(f, json_string_value(rel));
  json_t *df = json_object_get(n, "diff");
  if (df) {
    fputs("<br>", f);
    diff_image(f, df);
  }
  fputs("</td>", f);
}

/* Native mode: table, histograms per device, difference images. */
static void html_native(FILE *f, json_t *cases, json_t *devs, size_t nd, ulp_bins *hist) {
  size_t i;
  json_t *c;
  fputs("<h2>Native mode</h2><p>The same kernels built with the vendor's default options (contraction allowed): "
        "values that differ from the reproducible result, the largest difference in ulps and relative.</p>"
        "<table><tr><th>case</th>",
        f);
  for (size_t k = 0; k < nd; k++) fprintf(f, "<th>[%zu] differing / max ulp / max rel</th>", k);
  fputs("</tr>\n", f);
  json_array_foreach(cases, i, c) {
    if (strcmp(str(c, "status"), "ok")) continue;
    fputs("<tr><td>", f);
    html_escape(f, str(c, "name"));
    fputs("</td>", f);
    size_t k;
    json_t *r;
    json_array_foreach(json_object_get(c, "results"), k, r) html_native_cell(f, r);
    fputs("</tr>\n", f);
  }
  fputs("</table>\n<h3>Histogram of ulp differences per device (native vs reproducible, all cases)</h3>\n", f);
  for (size_t k = 0; k < nd; k++) {
    char title[300];
    snprintf(title, sizeof title, "[%zu] %s", k, str(json_array_get(devs, k), "name"));
    histogram_svg(f, hist[k], title);
  }
}

int suite_write_html(const char *path, json_t *doc) {
  FILE *f = fopen(path, "w");
  if (!f) return cli_error("cannot write %s", path);
  json_t *devs = json_object_get(doc, "devices"), *cases = json_object_get(doc, "cases");
  size_t nd = json_array_size(devs), i;
  json_t *c;
  html_head(f, doc, devs);
  fputs("</ol>\n<h2>Reproducible mode</h2><p>Each cell: the first 8 hex digits of the SHA-256 of the result, and "
        "whether it equals the host reference (C, <code>-ffp-contract=off</code>).</p><table><tr><th>case</th>"
        "<th>contract</th><th>reference</th>",
        f);
  for (size_t k = 0; k < nd; k++) fprintf(f, "<th>[%zu]</th>", k);
  fputs("</tr>\n", f);
  json_array_foreach(cases, i, c) html_repro_row(f, c, nd);
  fputs("</table>\n", f);
  int any_native = 0;
  ulp_bins *hist = native_histograms(cases, nd, &any_native);
  if (any_native) html_native(f, cases, devs, nd, hist);
  free(hist);
  fputs("\n</body></html>\n", f);
  if (fclose(f) != 0) return cli_error("cannot write %s", path);
  return 0;
}

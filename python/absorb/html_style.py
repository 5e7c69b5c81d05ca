"""The one stylesheet of the pages absorb writes (the report's ``index.html``, a scan's
``summary.html``): inline, so that each page is a single self-contained file, readable at 700 px
(tables scroll sideways; the report's data tables become one card per row)."""

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:1.5em auto;
padding:0 1em;color:#1d1d1f;line-height:1.45}
h1{font-size:1.5em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.05em;margin:1.4em 0 .3em}h4{font-size:1em;margin:1.2em 0 .3em}
.banner{border-radius:8px;padding:.8em 1.1em;margin:1em 0;border:3px solid}
.banner .head{font-size:1.25em;font-weight:700;margin:0 0 .3em}
.banner p{margin:.2em 0}
.b-compiled{background:#dafbe1;border-color:#1a7f37}
.b-audited{background:#fff8c5;border-color:#9a6700;border-style:dashed}
.b-failed,.b-errored{background:#ffebe9;border-color:#cf222e}
.b-none{background:#f6f8fa;border-color:#6e7781;border-style:dashed}
.badge{display:inline-block;padding:.05em .55em;border-radius:1em;font-size:.85em;
font-weight:600;margin:0 .3em .2em 0;border:2px solid transparent;white-space:nowrap}
.f-proved,.n-agrees{background:#1a7f37;color:#fff}
.f-audited{background:#fff;color:#7d4e00;border:2px dashed #9a6700;border-radius:3px}
.f-problem,.n-disagrees{background:#cf222e;color:#fff}
.f-none{background:#fff;color:#57606a;border-color:#8c959f}
.n-open,.k-open,.m-open{background:#8250df;color:#fff}
.n-error{background:#1d1d1f;color:#ffd33d}
.k-test{background:#57606a;color:#fff}.k-control{background:#fff;color:#57606a;border-color:#57606a}
.m-proved{background:#ddf4ff;color:#0550ae;border-color:#0969da}
.m-constructed{background:#fff;color:#0550ae;border-color:#0969da;border-style:dashed}
table{border-collapse:collapse;font-size:.8em;margin:.5em 0 1em;display:block;overflow-x:auto;
max-width:100%}
th,td{border:1px solid #d0d7de;padding:.2em .5em;text-align:right;white-space:nowrap}
th{background:#f6f8fa;white-space:normal;max-width:9em;vertical-align:bottom}
td.txt{white-space:normal;min-width:10em;text-align:left}td.word{text-align:left}
.summary td,td:first-child{text-align:left}
@media (max-width:760px){table.data,table.data tbody,table.data tr{display:block}
table.data thead{display:none}table.data tr{border:1px solid #d0d7de;margin:0 0 .6em;
padding:.2em 0}table.data td{display:flex;justify-content:space-between;gap:1em;border:none;
border-bottom:1px dotted #d0d7de;white-space:normal;text-align:right;min-width:0}
table.data td::before{content:attr(data-label);font-weight:600;text-align:left}}
.summary td:last-child{white-space:normal;min-width:12em}
.legend{background:#f6f8fa;border-radius:8px;padding:.5em 1em;margin:1em 0;font-size:.85em}
.legend-grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(290px,1fr));gap:0 1.5em}
.legend ul{list-style:none;padding:0;margin:.3em 0}.legend li{margin:.25em 0}
.note{font-size:.9em;color:#57606a;margin-top:-.5em}
.overview{font-size:1.15em;font-weight:600;background:#f6f8fa;border-left:6px solid #1d1d1f;
padding:.5em .9em;margin:.6em 0}
code{background:#f6f8fa;padding:0 .2em;border-radius:3px}
.statement{background:#f6f8fa;border-left:4px solid #0969da;padding:.5em 1em}
.crash{background:#1d1d1f;color:#ffd33d;padding:.4em .8em;border-radius:4px;font-family:monospace}
.control-link{border-left:4px solid #57606a;padding-left:.6em}
.region{border:1px solid #d0d7de;border-radius:8px;padding:.2em 1em .6em;margin:1em 0}
figure{margin:.5em 0 1.5em}figcaption{font-size:.9em;color:#333;max-width:70em}
img{max-width:100%;height:auto;border:1px solid #eee}nav a{margin-right:.8em}
"""

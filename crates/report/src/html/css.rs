//! The report's style sheet, inlined into the page (no external resources).

/// CSS of `report.html`. System fonts only; readable from 1280 px wide screens down to
/// phones; tables use tabular figures so numbers line up.
pub(crate) const CSS: &str = r#"
:root {
  --ink: #1d1d1f; --muted: #5f6368; --faint: #8a8f98; --rule: #e3e5e8; --panel: #f7f8fa;
  --within: #007a5a; --outside: #c24e00; --predicted: #0062a0; --gap: #9aa0a6;
  --within-bg: #e6f4ef; --outside-bg: #fbeee4; --predicted-bg: #e5f0f8; --gap-bg: #f1f2f4;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; color: var(--ink); background: #ffffff;
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
a { color: #0b62b5; text-decoration: none; }
a:hover { text-decoration: underline; }
.page { max-width: 1240px; margin: 0 auto; padding: 0 28px; }
header.page-head { padding: 28px 0 8px; border-bottom: 1px solid var(--rule); }
h1 { font-size: 28px; line-height: 1.2; margin: 0 0 6px; letter-spacing: -0.01em; }
h2 { font-size: 22px; line-height: 1.25; margin: 0 0 8px; }
h3 { font-size: 16px; margin: 28px 0 10px; color: var(--muted); text-transform: uppercase; letter-spacing: 0.04em; }
.meta { color: var(--muted); margin: 0 0 12px; font-size: 14px; }
.meta code { font-size: 13px; background: var(--panel); padding: 1px 5px; border-radius: 4px; }
code, .id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; }

.summary { padding: 22px 0 6px; }
.counts { display: flex; flex-wrap: wrap; gap: 12px; }
.count {
  flex: 1 1 160px; display: block; padding: 12px 16px; border-radius: 8px;
  background: var(--panel); border-left: 5px solid var(--gap); color: var(--ink);
}
.count:hover { text-decoration: none; filter: brightness(0.98); }
.count .n { display: block; font-size: 30px; font-weight: 650; line-height: 1.1; font-variant-numeric: tabular-nums; }
.count .what { color: var(--muted); font-size: 14px; }
.count.within { border-color: var(--within); background: var(--within-bg); }
.count.within .n { color: var(--within); }
.count.outside { border-color: var(--outside); background: var(--outside-bg); }
.count.outside .n { color: var(--outside); }
.count.predicted { border-color: var(--predicted); background: var(--predicted-bg); }
.count.predicted .n { color: var(--predicted); }
.count.not_modelled, .count.not_run { border-color: var(--gap); background: var(--gap-bg); }
.count.not_modelled .n, .count.not_run .n { color: var(--faint); }
.bar { display: flex; height: 10px; border-radius: 5px; overflow: hidden; margin: 14px 0 4px; background: var(--gap-bg); }
.bar span { display: block; height: 100%; }
.bar .within { background: var(--within); }
.bar .outside { background: var(--outside); }
.bar .predicted { background: var(--predicted); }
.bar .not_modelled, .bar .not_run { background: #d5d8dc; }
.key { color: var(--muted); font-size: 13px; margin: 6px 0 0; }
.key span { margin-right: 14px; white-space: nowrap; }

nav.toc { margin: 22px 0 8px; padding: 16px 20px; background: var(--panel); border-radius: 8px; }
nav.toc h2 { font-size: 15px; text-transform: uppercase; letter-spacing: 0.05em; color: var(--muted); margin: 0 0 8px; }
nav.toc ol { margin: 0; padding-left: 22px; }
nav.toc > ol > li { margin: 6px 0; }
nav.toc ol ol { padding-left: 18px; font-size: 14px; columns: 2 320px; column-gap: 28px; }
nav.toc ol ol li { break-inside: avoid; }
.mini { margin-left: 8px; font-size: 13px; color: var(--muted); font-variant-numeric: tabular-nums; white-space: nowrap; }
.mini .within { color: var(--within); } .mini .outside { color: var(--outside); }
.mini .predicted { color: var(--predicted); } .mini .not_modelled, .mini .not_run { color: var(--faint); }

section.study, section.all-claims { padding-top: 34px; margin-top: 26px; border-top: 1px solid var(--rule); }
.study-summary { max-width: 80ch; color: #33363a; margin: 0 0 18px; }
.figure-grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 540px), 1fr)); gap: 22px; }
figure.fig { margin: 0; padding: 10px; border: 1px solid var(--rule); border-radius: 8px; background: #ffffff; }
figure.fig svg { display: block; width: 100%; height: auto; }
figcaption { padding: 8px 6px 2px; font-size: 14px; color: #33363a; }
figcaption p { margin: 0 0 6px; }
.chips { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; font-size: 12.5px; }
.chips .label { color: var(--muted); }
.chip { display: inline-block; padding: 1px 8px; border-radius: 10px; background: var(--gap-bg); color: var(--faint); }
.chip.within { background: var(--within-bg); color: var(--within); }
.chip.outside { background: var(--outside-bg); color: var(--outside); }
.chip.predicted { background: var(--predicted-bg); color: var(--predicted); }
.none { color: var(--faint); font-style: italic; }

.table-wrap { overflow-x: auto; }
table.claims { border-collapse: collapse; width: 100%; font-size: 14px; }
table.claims th, table.claims td { padding: 6px 10px; border-bottom: 1px solid var(--rule); vertical-align: top; text-align: left; }
table.claims thead th { font-size: 12.5px; color: var(--muted); font-weight: 600; border-bottom: 2px solid #cfd3d8; white-space: nowrap; }
table.claims td.num, table.claims th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.claims td.id { font-size: 12.5px; white-space: nowrap; }
table.claims td.desc { min-width: 260px; }
table.claims .note { display: block; color: var(--muted); font-size: 12.5px; font-style: italic; }
table.claims tr.group th { background: var(--panel); font-size: 14px; color: var(--ink); padding-top: 10px; }
table.claims td.status { white-space: nowrap; font-weight: 600; }
tr.within td.status { color: var(--within); }
tr.outside td.status { color: var(--outside); }
tr.outside td.dev { color: var(--outside); }
tr.predicted td.status { color: var(--predicted); }
tr.not_modelled td, tr.not_run td { color: var(--faint); background: var(--gap-bg); }
tr.not_modelled td.id a, tr.not_run td.id a { color: var(--faint); }
.withheld { color: var(--faint); font-style: italic; }
tr:target td { background: #fff7d6; }

footer { margin: 40px 0 0; padding: 18px 0 32px; border-top: 1px solid var(--rule); color: var(--muted); font-size: 13px; }
"#;

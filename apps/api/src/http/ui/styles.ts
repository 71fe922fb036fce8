/**
 * The status page's one stylesheet, served as /ui/assets/ui.css (a module, so the build ships it with the
 * code; style-src 'self' allows no inline styles). System fonts, no web fonts: nothing loads from elsewhere.
 * Phase colours keep a contrast of at least 4.5:1 and every badge also says its state in words.
 */
export const STYLES = `
:root {
  --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #ffffff; --panel: #f6f8fa; --link: #0550ae;
  --ready-fg: #116329; --ready-bg: #dafbe1;
  --progressing-fg: #0550ae; --progressing-bg: #ddf4ff;
  --failed-fg: #a40e26; --failed-bg: #ffebe9;
  --waiting-fg: #6c4400; --waiting-bg: #fff8c5;
  --unreachable-fg: #6639ba; --unreachable-bg: #fbefff;
  --unobserved-fg: #424a53; --unobserved-bg: #eaeef2;
}
* { box-sizing: border-box; }
html { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Liberation Sans", sans-serif; color: var(--fg); background: var(--bg); }
body { margin: 0; }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible { outline: 3px solid #0969da; outline-offset: 2px; }
.top { display: flex; align-items: center; gap: 1rem; padding: .6rem 1.5rem; border-bottom: 1px solid var(--line); background: var(--panel); }
.brand { font-weight: 700; font-size: 1.15rem; text-decoration: none; color: var(--fg); }
.top nav { flex: 1; }
.top nav a { margin-right: 1rem; }
.who { color: var(--muted); }
.page { padding: 1rem 1.5rem 2rem; max-width: 1400px; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; }
button, .button { font: inherit; padding: .3rem .8rem; border: 1px solid var(--line); border-radius: 6px; background: #fff; color: var(--fg); cursor: pointer; text-decoration: none; display: inline-block; }
button.primary, .button.primary { background: #1f6feb; border-color: #1f6feb; color: #fff; }
input, select { font: inherit; padding: .3rem .5rem; border: 1px solid #818b98; border-radius: 6px; }
label { font-weight: 600; margin-right: .3rem; }
.filters { display: flex; flex-wrap: wrap; gap: .8rem; align-items: center; margin-bottom: 1rem; }
.counts { display: flex; flex-wrap: wrap; gap: .5rem; list-style: none; padding: 0; margin: 0 0 1rem; }
.counts a { text-decoration: none; }
.badge { display: inline-block; padding: .05rem .55rem; border-radius: 999px; font-size: .85rem; font-weight: 600; white-space: nowrap; border: 1px solid transparent; }
.badge.ready { color: var(--ready-fg); background: var(--ready-bg); }
.badge.progressing { color: var(--progressing-fg); background: var(--progressing-bg); }
.badge.failed { color: var(--failed-fg); background: var(--failed-bg); }
.badge.waiting { color: var(--waiting-fg); background: var(--waiting-bg); }
.badge.unreachable { color: var(--unreachable-fg); background: var(--unreachable-bg); }
.badge.unobserved { color: var(--unobserved-fg); background: var(--unobserved-bg); }
.badge.selected { border-color: currentColor; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; color: var(--muted); padding-bottom: .4rem; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { background: var(--panel); font-size: .9rem; }
th small, td small { display: block; color: var(--muted); font-weight: 400; }
.none { color: var(--muted); }
.pager { display: flex; gap: 1rem; align-items: center; margin: .8rem 0; }
.empty { padding: 2rem; background: var(--panel); border-radius: 8px; }
.broken { padding: .5rem 1rem; margin-bottom: 1rem; border-left: 4px solid var(--failed-fg); background: var(--failed-bg); border-radius: 4px; }
.broken h2 { font-size: 1rem; margin: .3rem 0; }
.broken code { white-space: pre-wrap; word-break: break-word; }
dl.spec { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0 0 1rem; }
dl.spec dt { font-weight: 600; }
dl.spec dd { margin: 0; }
.clusters { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 1rem; }
.cluster { border: 1px solid var(--line); border-radius: 8px; padding: .6rem 1rem 1rem; }
.cluster h3 { margin: .3rem 0 .6rem; font-size: 1.05rem; display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.timeline { list-style: none; margin: 0; padding: 0 0 0 .4rem; border-left: 2px solid var(--line); }
.timeline li { position: relative; padding: .15rem 0 .55rem 1.1rem; }
.timeline li::before { content: ""; position: absolute; left: -.5rem; top: .45rem; width: .8rem; height: .8rem; border-radius: 50%; background: #fff; border: 2px solid var(--line); }
.timeline li.done::before { background: var(--ready-fg); border-color: var(--ready-fg); }
.timeline li.active::before { background: var(--progressing-bg); border-color: var(--progressing-fg); }
.timeline li.failed::before { background: var(--failed-fg); border-color: var(--failed-fg); }
.step { font-weight: 600; }
.step-state { font-size: .8rem; color: var(--muted); margin-left: .3rem; }
.reason { display: block; font-size: .9rem; overflow-wrap: anywhere; }
.reason.failed { color: var(--failed-fg); }
.when { display: block; font-size: .8rem; color: var(--muted); overflow-wrap: anywhere; }
pre { background: var(--panel); padding: .8rem; border-radius: 6px; overflow-x: auto; font-size: .85rem; }
details { margin: .3rem 0; }
summary { cursor: pointer; font-family: ui-monospace, "Liberation Mono", monospace; font-size: .9rem; }
code, .mono { font-family: ui-monospace, "Liberation Mono", monospace; }
.footer { color: var(--muted); font-size: .85rem; padding: 0 1.5rem 1rem; }
.notice { padding: .6rem 1rem; border-radius: 6px; background: var(--failed-bg); color: var(--failed-fg); margin-bottom: 1rem; }
.sign-in { max-width: 28rem; margin: 3rem auto; padding: 1.5rem; border: 1px solid var(--line); border-radius: 8px; }
.sign-in p { color: var(--muted); }
.sign-in input { width: 100%; margin: .3rem 0 1rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
`;

"use strict";
// coderl view: the page's own code (no libraries). Data: #meta and #index are parsed at load; a
// sample's full record is one line of #details, parsed only when the sample is opened.
const META = JSON.parse(document.getElementById("meta").textContent);
const INDEX = JSON.parse(document.getElementById("index").textContent);
const COL = Object.fromEntries(META.columns.map((c, i) => [c, i]));
const ROW_H = 24;
let detailsText = null, lineStarts = null, lowered = null;  // lowered: each record's text, lower-case
let visible = [];  // indexes into INDEX after filtering

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const fmt = (x, d = 3) => (x === null || x === undefined) ? "–" : (typeof x === "number" ? +x.toFixed(d) : x);

function details() {
  if (detailsText === null) {
    detailsText = $("details").textContent;
    lineStarts = [0];
    for (let i = detailsText.indexOf("\n"); i !== -1; i = detailsText.indexOf("\n", i + 1)) lineStarts.push(i + 1);
  }
  return detailsText;
}
function recordText(i) {
  const text = details();
  const end = i + 1 < lineStarts.length ? lineStarts[i + 1] - 1 : text.length;
  return text.slice(lineStarts[i], end);
}
function record(i) { return JSON.parse(recordText(i)); }

// ---------- overview ----------
const PALETTE = ["#18794e", "#b42318", "#dc6803", "#7a5af8", "#0086c9", "#c11574", "#667085", "#a15c07", "#4e5ba6"];

function axes(w, h, pad, ymax, steps) {
  let s = `<line x1="${pad}" y1="${h - pad}" x2="${w - 5}" y2="${h - pad}" stroke="#999"/>`
        + `<line x1="${pad}" y1="5" x2="${pad}" y2="${h - pad}" stroke="#999"/>`
        + `<text x="${pad - 4}" y="12" text-anchor="end" font-size="10">${fmt(ymax, 2)}</text>`
        + `<text x="${pad - 4}" y="${h - pad}" text-anchor="end" font-size="10">0</text>`;
  const every = Math.max(1, Math.ceil(steps.length / 10));
  steps.forEach((st, k) => {
    if (k % every === 0) s += `<text x="${xAt(k, steps.length, w, pad)}" y="${h - pad + 12}" text-anchor="middle" font-size="10">${esc(st)}</text>`;
  });
  return s;
}
// x of step k of n: inset 20 px from both ends, so a bar centred there stays inside the plot
function xAt(k, n, w, pad) { return pad + 20 + (n === 1 ? (w - pad - 45) / 2 : k * (w - pad - 45) / (n - 1)); }

function linePlot(title, steps, series, ymax) {
  const w = 340, h = 170, pad = 30;
  let body = axes(w, h, pad, ymax, steps), legend = "";
  series.forEach(([name, values], j) => {
    const pts = values.map((v, k) => v === null ? null : [xAt(k, steps.length, w, pad), h - pad - (v / (ymax || 1)) * (h - pad - 8)]);
    const path = pts.filter(Boolean).map((p, k) => (k ? "L" : "M") + p[0].toFixed(1) + " " + p[1].toFixed(1)).join(" ");
    body += `<path d="${path}" fill="none" stroke="${PALETTE[j]}" stroke-width="2"/>`;
    pts.forEach((p, k) => { if (p) body += `<circle cx="${p[0]}" cy="${p[1]}" r="3" fill="${PALETTE[j]}"><title>step ${esc(steps[k])}: ${fmt(values[k])}</title></circle>`; });
    legend += `<span><i style="background:${PALETTE[j]}"></i>${esc(name)}</span>`;
  });
  return plotBox(title, body, w, h, legend);
}
function barPlot(title, steps, stacks, names) {
  const w = 340, h = 170, pad = 30;
  const totals = steps.map((_, k) => stacks.reduce((a, s) => a + s[k], 0));
  const ymax = Math.max(1, ...totals);
  let body = axes(w, h, pad, ymax, steps), legend = "";
  const bw = Math.max(3, Math.min(30, (w - pad - 20) / steps.length - 4));
  steps.forEach((st, k) => {
    let y = h - pad;
    stacks.forEach((s, j) => {
      const bh = (s[k] / ymax) * (h - pad - 8);
      if (bh > 0) body += `<rect x="${xAt(k, steps.length, w, pad) - bw / 2}" y="${y - bh}" width="${bw}" height="${bh}" fill="${PALETTE[j % PALETTE.length]}"><title>step ${esc(st)} ${esc(names[j])}: ${s[k]}</title></rect>`;
      y -= bh;
    });
  });
  if (names.length > 1) names.forEach((n, j) => { legend += `<span><i style="background:${PALETTE[j % PALETTE.length]}"></i>${esc(n)}</span>`; });
  return plotBox(title, body, w, h, legend);
}
function plotBox(title, body, w, h, legend) {
  return `<div class="plot"><h3>${esc(title)}</h3><svg viewBox="0 0 ${w} ${h}" preserveAspectRatio="none">${body}</svg><div class="legend">${legend}</div></div>`;
}

// the reward-hack signals every record carries (coderl.swe.hack_signals), one bar each per step
const HACK_FLAGS = ["tampered", "tests_touched", "ended_early"];
function renderOverview() {
  const el = $("overview");
  if (!INDEX.length) {
    el.innerHTML = `<p class="empty">No readable samples in this run directory. ${META.skipped.length} item(s) skipped: see the list above.</p>`;
    return;
  }
  const rows = META.overview;
  const split = rows.some((r) => r.split === "train") ? "train" : rows[0].split;
  const mine = rows.filter((r) => r.split === split);
  const steps = mine.map((r) => r.step === null ? "–" : r.step);
  const verdicts = [...new Set(mine.flatMap((r) => Object.keys(r.verdicts)))].sort();
  const grades = [...new Set(mine.flatMap((r) => Object.keys(r.grade_statuses)))].sort();
  const findings = [...new Set(mine.flatMap((r) => Object.keys(r.hack.findings)))].sort();
  el.innerHTML = `<p>${INDEX.length} samples (${esc(META.bytes_per_sample)} bytes per sample in this page), plots: the ${esc(split)} split by step. Sources: ${esc(META.sources.join(", ") || "none")}</p>`
    + `<div class="plots">`
    + linePlot("mean reward", steps, [["reward", mine.map((r) => r.reward)]], Math.max(1, ...mine.map((r) => r.reward || 0)))
    + linePlot("accepted / resolved rate", steps, [["accepted", mine.map((r) => r.accepted)]], 1)
    + barPlot("verdict mix", steps, verdicts.map((v) => mine.map((r) => r.verdicts[v] || 0)), verdicts)
    + (grades.length ? barPlot("grade status mix (repository tasks)", steps, grades.map((g) => mine.map((r) => r.grade_statuses[g] || 0)), grades) : "")
    + barPlot("zero-variance groups (no gradient)", steps, [mine.map((r) => r.zero_variance_groups)], ["zero-variance groups"])
    + barPlot("sandbox errors", steps, [mine.map((r) => r.sandbox_errors)], ["sandbox errors"])
    + barPlot("reward-hack signals (samples)", steps, HACK_FLAGS.map((k) => mine.map((r) => r.hack[k])), HACK_FLAGS)
    + (findings.length ? barPlot("grader findings by class", steps, findings.map((c) => mine.map((r) => r.hack.findings[c] || 0)), findings) : "")
    + `</div><table class="steps"><tr><th>split</th><th>step</th><th>samples</th><th>reward</th><th>accepted</th><th>groups</th><th>zero-var</th><th>sandbox err</th><th>tampered</th><th>tests touched</th><th>ended early</th><th>findings</th></tr>`
    + rows.map((r) => `<tr><td>${esc(r.split)}</td><td>${fmt(r.step)}</td><td>${r.samples}</td><td>${fmt(r.reward)}</td><td>${fmt(r.accepted)}</td><td>${r.groups}</td><td>${r.zero_variance_groups}</td><td>${r.sandbox_errors}</td>`
      + HACK_FLAGS.map((k) => `<td class="hack-${k}">${r.hack[k]}</td>`).join("")
      + `<td class="hack-findings">${esc(Object.entries(r.hack.findings).map(([c, n]) => `${c} ${n}`).join(", "))}</td></tr>`).join("")
    + `</table>`;
}

// ---------- sample table ----------
function fillSelect(id, values) {
  const sel = $(id);
  for (const v of values) sel.insertAdjacentHTML("beforeend", `<option value="${esc(v)}">${esc(v)}</option>`);
}
function setupTable() {
  fillSelect("f-step", [...new Set(INDEX.map((r) => r[COL.step] === null ? "–" : r[COL.step]))].sort((a, b) => (+a) - (+b)));
  fillSelect("f-verdict", [...new Set(INDEX.map((r) => r[COL.verdict]))].sort());
  fillSelect("f-grade", [...new Set(INDEX.map((r) => r[COL.grade_status]))].sort());
  $("thead").innerHTML = ["#", ...META.columns].map((c) => `<span>${esc(c)}</span>`).join("");
  let timer = null;
  for (const id of ["f-step", "f-verdict", "f-grade", "f-rmin", "f-rmax", "f-group", "f-tools", "f-sberr", "f-text"]) {
    $(id).addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(applyFilters, id === "f-text" ? 200 : 0); });
  }
  $("table").addEventListener("scroll", drawRows);
  window.addEventListener("resize", drawRows);
  $("table").addEventListener("click", (e) => {
    const row = e.target.closest(".row");
    if (row) location.hash = "#sample/" + row.dataset.row;
  });
  applyFilters();
}
function applyFilters() {
  const step = $("f-step").value, verdict = $("f-verdict").value, grade = $("f-grade").value;
  const group = $("f-group").value.trim();
  const rmin = $("f-rmin").value === "" ? null : +$("f-rmin").value;
  const rmax = $("f-rmax").value === "" ? null : +$("f-rmax").value;
  const tools = $("f-tools").value === "" ? null : +$("f-tools").value;
  const sberr = $("f-sberr").value, text = $("f-text").value.trim().toLowerCase();
  if (text && lowered === null) lowered = INDEX.map((_, i) => recordText(i).toLowerCase());
  visible = [];
  for (let i = 0; i < INDEX.length; i++) {
    const r = INDEX[i];
    if (step !== "" && String(r[COL.step] === null ? "–" : r[COL.step]) !== step) continue;
    if (verdict !== "" && r[COL.verdict] !== verdict) continue;
    if (grade !== "" && r[COL.grade_status] !== grade) continue;
    if (rmin !== null && !(r[COL.reward] >= rmin)) continue;
    if (rmax !== null && !(r[COL.reward] <= rmax)) continue;
    if (group && !r[COL.group].includes(group)) continue;
    if (tools !== null && !(r[COL.tool_calls] >= tools)) continue;
    if (sberr !== "" && String(r[COL.sandbox_error]) !== sberr) continue;
    if (text && lowered[i].indexOf(text) === -1) continue;
    visible.push(i);
  }
  $("count").textContent = `${visible.length} of ${INDEX.length} samples`;
  $("spacer").style.height = visible.length * ROW_H + "px";
  $("table").scrollTop = 0;
  drawRows();
}
function drawRows() {
  const box = $("table");
  const first = Math.max(0, Math.floor(box.scrollTop / ROW_H) - 10);
  const last = Math.min(visible.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW_H) + 10);
  let html = "";
  for (let k = first; k < last; k++) {
    const i = visible[k], r = INDEX[i];
    html += `<div class="row" data-row="${i}" style="top:${k * ROW_H}px"><span>${i}</span>`
      + META.columns.map((c) => `<span class="${c === "verdict" || c === "grade_status" ? "v-" + esc(r[COL[c]]) : ""}">${esc(fmt(r[COL[c]]))}</span>`).join("")
      + `</div>`;
  }
  box.querySelectorAll(".row").forEach((n) => n.remove());
  box.insertAdjacentHTML("beforeend", html);
}

// ---------- one sample ----------
function messageHtml(m) {
  let calls = "";
  for (const c of m.tool_calls || []) {
    const args = typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments, null, 1);
    const code = c.arguments && typeof c.arguments === "object" && c.arguments.code;
    calls += `<div class="call"><b>tool call: ${esc(c.name)}</b>${c.ill_formed ? " (ill-formed)" : ""}<pre>${esc(code || args)}</pre></div>`;
  }
  const source = m.source ? ` (from ${esc(m.source)})` : "";
  return `<div class="msg ${esc(m.role)}"><b class="role">${esc(m.role)}${source}</b><pre>${esc(m.content)}</pre>${calls}</div>`;
}
function diffHtml(diff) {
  return `<pre class="diff">` + diff.split("\n").map((l) => {
    const cls = l.startsWith("+++") || l.startsWith("---") || l.startsWith("diff ") ? "file" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : "";
    return `<span class="${cls}">${esc(l)}</span>`;
  }).join("\n") + `</pre>`;
}
function tokensHtml(t) {
  const starts = new Set(t.turn_starts || []);
  const parts = [];
  let m1 = 0, turn = 0;
  for (let k = 0; k < t.ids.length; k++) {
    if (k === t.fork_at) parts.push(`<span class="fork-mark" title="the final branch forked from the previous one here: the harness rewrote its history; what follows differs">fork</span>`);
    if (starts.has(k)) parts.push(`<span class="turn-mark" title="sampled turn ${turn + 1} starts">T${++turn}</span>`);
    const on = t.mask[k] === "1";
    if (on) m1++;
    const lp = t.logprobs[k] || 0;
    const shade = on ? `background:rgba(24,121,78,${(0.08 + 0.6 * (1 - Math.exp(lp))).toFixed(2)})` : "";
    const text = (t.pieces || {})[t.ids[k]] ?? `<${t.ids[k]}>`;
    parts.push(`<span class="tok m${on ? 1 : 0}" data-k="${k}" style="${shade}">${esc(text)}</span>`);
  }
  return {html: parts.join(""), m1};
}
function renderSample(i) {
  const el = $("sample");
  if (!(i >= 0 && i < INDEX.length)) { el.innerHTML = `<p class="empty">No sample ${esc(i)}.</p>`; return; }
  let r;
  try { r = record(i); } catch (e) { el.innerHTML = `<p class="empty">Sample ${i} cannot be decoded: ${esc(e.message)}</p>`; return; }
  const facts = [["step", r.step], ["split", r.split], ["kind", r.kind], ["group", r.group], ["reward", r.reward],
    ["verdict", r.verdict], ["grade status", r.grade_status], ["sandbox error", r.sandbox_error], ["tool calls", r.tool_calls]];
  if (r.kind === "agent") facts.push(["branches", r.branches], ["drifts", r.drifts], ["demoted tokens", r.demoted_tokens], ["dropped sampled tokens", r.dropped_sampled_tokens]);
  if (r.tests_total !== undefined) facts.push(["tests", `${r.tests_passed}/${r.tests_total}`]);
  const hack = r.hack || {findings: {}};
  facts.push(["hack signals", [...HACK_FLAGS.filter((k) => hack[k]), ...Object.entries(hack.findings).map(([c, n]) => `${c} ${n}`)].join(", ") || "none"]);
  let html = `<div class="sample"><h2>Sample ${i} <a href="#samples">back to the table</a></h2><div class="facts">`
    + facts.map(([k, v]) => `<span>${esc(k)}: <b>${esc(fmt(v))}</b></span>`).join("") + `</div>`;
  if ((r.truncated || []).length) html += `<p>Cut to the record size cap: ${esc(r.truncated.join(", "))}</p>`;
  if (r.error) html += `<p>error: ${esc(r.error)}</p>`;
  // an agent's turns are the harness's own conversation (its system prompt and task included)
  const prompt = (r.prompt || []).map(messageHtml).join("");
  html += r.kind === "agent" ? `<details><summary>dataset prompt</summary>${prompt}</details><h3>Conversation (as the harness held it)</h3>`
    : `<h3>Conversation</h3>` + prompt;
  html += (r.turns || []).map(messageHtml).join("");
  if (!r.turns && !r.prompt) html += `<p class="empty">This record has no turns (a reward_samples line).</p>`;
  if ((r.tool_runs || []).length) {
    html += `<h3>Sandbox runs (code tool)</h3>` + r.tool_runs.map((t, k) => `<div class="call"><b>#${k + 1} ${esc(t.language)}</b> status <b>${esc(t.status)}</b>, run ${fmt(t.run_wall_s)} s, call ${fmt(t.seconds)} s${t.sandbox_error ? " <b class=\"v-sandbox_error\">sandbox error</b>" : ""}<pre>${esc(t.code)}</pre><pre>${esc(t.shown)}</pre></div>`).join("");
  }
  if ((r.commands || []).length) {
    html += `<h3>Harness commands</h3>` + r.commands.map((c, k) => `<div class="call"><b>#${k + 1} ${esc(c.name)}</b><pre>${esc(typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments))}</pre><pre>${esc(c.output ?? "(no output recorded)")}</pre></div>`).join("");
  }
  if (r.harness) html += `<p>harness: exit ${esc(r.harness.exit_code)}, timed out ${esc(r.harness.timed_out)}, ${esc(r.harness.isolation)}, wall ${fmt(r.harness.wall_s)} s, generation ${fmt(r.harness.generation_s)} s</p>` + (r.harness.output_tail ? `<details><summary>harness output</summary><pre>${esc(r.harness.output_tail)}</pre></details>` : "");
  if (r.answer !== undefined) html += `<h3>Final answer</h3><pre>${esc(r.answer)}</pre>`;
  if (r.judge) {
    const j = r.judge;
    html += `<h3>Judge: ${esc(j.verdict)}</h3>` + (j.compile_message ? `<pre>${esc(j.compile_message)}</pre>` : "") + (j.error ? `<p>${esc(j.error)}</p>` : "")
      + `<table class="tests"><tr><th>test</th><th>verdict</th><th>status</th><th>wall s</th><th>message</th><th>stdout</th><th>stderr</th></tr>`
      + (j.tests || []).map((t, k) => `<tr><td>${k + 1}</td><td class="v-${esc(t.verdict)}">${esc(t.verdict)}</td><td>${esc(t.status)}</td><td>${fmt(t.wall_s)}</td><td>${esc(t.message)}</td><td><pre>${esc(t.stdout)}</pre></td><td><pre>${esc(t.stderr)}</pre></td></tr>`).join("") + `</table>`;
  }
  if (r.grader) html += `<h3>Grader: ${esc(r.grader.status)} (reward ${fmt(r.grader.reward)})</h3><pre>${esc(r.grader.message)}</pre>`
    + ((r.grader.findings || []).length ? `<ul class="findings">${r.grader.findings.map((f) => `<li>${esc(f)}</li>`).join("")}</ul>` : "")
    + ((r.grader.tests_touched || []).length ? `<p>diff touched test files (dropped): ${esc(r.grader.tests_touched.join(", "))}</p>` : "") + `<details open><summary>grader log</summary><pre>${esc(r.grader.log)}</pre></details>`;
  if (r.diff) html += `<h3>Diff</h3>` + diffHtml(r.diff);
  if (r.tokens && r.tokens.ids) {
    const t = tokensHtml(r.tokens);
    html += `<h3>Tokens (response: mask 1 trains, green; darker = less likely)</h3><p>${r.tokens.ids.length} tokens, <b id="m1-count">${t.m1}</b> with mask 1, prompt ${esc(r.tokens.prompt_len)} tokens; branch ${esc(r.branches)} of ${esc(r.branches)}, drifts ${esc(r.drifts)}${r.drifts ? " (the history was rewritten: earlier branches are not trained)" : ""}</p><div id="tokens">${t.html}</div>`;
  }
  el.innerHTML = html + `</div>`;
  const box = $("tokens");
  if (box) {
    box.addEventListener("mousemove", (e) => {
      const s = e.target.closest(".tok"), tip = $("tip");
      if (!s) { tip.hidden = true; return; }
      const k = +s.dataset.k;
      tip.textContent = `id ${r.tokens.ids[k]}  text ${JSON.stringify(s.textContent)}  logprob ${r.tokens.logprobs[k]}  mask ${r.tokens.mask[k]}`;
      tip.style.left = e.clientX + 12 + "px";
      tip.style.top = e.clientY + 14 + "px";
      tip.hidden = false;
    });
    box.addEventListener("mouseleave", () => { $("tip").hidden = true; });
  }
}

// ---------- routing ----------
function route() {
  const h = location.hash || "#overview";
  const [view, arg] = h.slice(1).split("/");
  for (const v of ["overview", "samples", "sample"]) $(v).hidden = v !== (["overview", "samples", "sample"].includes(view) ? view : "overview");
  $("nav-overview").className = view === "overview" || !view ? "on" : "";
  $("nav-samples").className = view === "samples" ? "on" : "";
  $("tip").hidden = true;
  if (view === "samples") drawRows();
  if (view === "sample") renderSample(+arg);
}

function init() {
  $("title").textContent = META.title;
  document.title = META.title;
  $("summary").textContent = `${INDEX.length} samples, ${META.skipped.length} skipped`;
  if (META.skipped.length) {
    $("skipped").hidden = false;
    $("skipped").open = INDEX.length === 0;
    $("skipped-summary").textContent = `Skipped: ${META.skipped.length} item(s) that could not be read`;
    $("skipped-list").innerHTML = META.skipped.map((s) => `<li>${esc(s.path)}${s.line ? ":" + s.line : ""}: ${esc(s.reason)}</li>`).join("");
  }
  renderOverview();
  setupTable();
  window.addEventListener("hashchange", route);
  route();
}
init();

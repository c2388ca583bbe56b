// One episode as the report and the viewer show it (the static report and `raleval view`
// share this file). Every text in an episode is untrusted: model outputs, tool results and task
// files are escaped before they reach the page.
const raleval = (function () {
  function esc(s) { return String(s == null ? "" : s).replace(/[&<>"']/g,
    (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c])); }
  function callLine(e) {
    const c = e.call_scores || {};
    if (c.call_precision == null) return "";
    const dep = c.on_gold_path ? "stays on a gold path" :
      `leaves every gold path at step ${c.first_departure + 1}`;
    return `<p class="calls"><b>tool calls vs gold:</b> precision ` +
      `${c.call_precision.toFixed(2)}, recall ${c.call_recall.toFixed(2)}; ${esc(dep)}; ` +
      `evidence ${c.evidence_retrieved ? "retrieved" : "not retrieved"}</p>`;
  }
  function episodeHTML(e, P) {
    const steps = e.steps.map((s, k) =>
      `<div class="step ${esc(s.kind)}"><b>step ${k + 1}</b> ` +
      `${s.tool ? "<code>" + esc(s.tool) + "</code>" : ""} ` +
      `<span class="muted">${esc(s.kind)}${s.cause ? " (" + esc(s.cause) + ")" : ""}, ` +
      `${(s.latency * 1000).toFixed(1)} ms</span>` +
      (s.thought ? `<div><i>thought:</i> ${esc(s.thought)}</div>` : "") +
      (s.args ? `<div><i>arguments:</i> <code>${esc(s.args)}</code></div>` : "") +
      (s.raw ? `<div><i>the model wrote:</i> <code>${esc(s.raw)}</code></div>` : "") +
      (s.obs != null ? `<pre>${esc(s.obs)}</pre>` : "") + "</div>").join("");
    const llm = e.llm.length ? `<details class="llm"><summary><b>model calls</b> (${e.llm.length})` +
      `</summary>` + e.llm.map((c, k) =>
        `<div class="call"><b>call ${k + 1}</b> <span class="muted">` +
        `${(c.latency * 1000).toFixed(0)} ms` +
        (c.tokens[0] != null ? `, ${c.tokens[0]} prompt / ${c.tokens[1]} completion tokens` : "") +
        (c.error ? `, error: ${esc(c.error)}` : "") + `</span>` +
        `<div><i>${k === 0 ? "prompt (system prompt, demonstrations, question)" :
          (c.delta ? "added to the prompt" : "prompt")}:</i></div><pre>${esc(c.prompt)}</pre>` +
        `<div><i>reply:</i></div><pre>${esc(c.output)}</pre>` +
        (c.tool_calls.length ? `<div><i>tool calls:</i> <code>${esc(c.tool_calls.join("; "))}` +
          `</code></div>` : "") + `</div>`).join("") + `</details>` : "";
    const tree = e.tree ? `<details class="tree" open><summary><b>DFSDT search tree</b> ` +
      `(${e.tree.length} nodes)</summary><ul class="tree">` + e.tree.map((n) =>
        `<li style="margin-left:${n.depth * 1.2}em"><span class="muted">#${n.id}` +
        `${n.parent != null ? " &larr; #" + n.parent : ""}</span> ` +
        `<span class="status ${esc(n.status)}">${esc(n.status)}</span> ` +
        (n.thought ? `<i>${esc(n.thought)}</i> ` : "") +
        (n.tool ? `<code>${esc(n.tool)}${n.args ? esc(n.args) : ""}</code>` : "") +
        (n.obs ? `<div class="muted">&rarr; ${esc(n.obs)}</div>` : "") + `</li>`).join("") +
      `</ul></details>` : "";
    const p = P[e.system] || {};
    const demos = (p.rendered || {})[e.family] || [];
    const ids = (p.ids || {})[e.family] || [];
    const prompt = p.template ? `<details class="prompt"><summary><b>system prompt and ` +
      `demonstrations</b> (${demos.length} demonstration${demos.length === 1 ? "" : "s"}` +
      `${ids.length ? ": " + esc(ids.join(", ")) : ""})</summary>` +
      `<div><i>system prompt (template):</i></div><pre>${esc(p.template)}</pre>` +
      demos.map((text, k) => `<div><i>demonstration ${k + 1}:</i></div>` +
        `<pre>${esc(text)}</pre>`).join("") + `</details>` : "";
    return `<h3>${esc(e.task_id)} <span class="label ${esc(e.label)}">${esc(e.label)}` +
      `</span></h3><p><b>question:</b> ${esc(e.question)}</p>` +
      `<p><b>gold:</b> ${esc(e.gold)} &nbsp; <b>answer:</b> ${esc(e.answer)}</p>` +
      `<p><b>why ${esc(e.label)}:</b> ${esc(e.reason)}</p>` +
      ((e.key_points || []).length ? `<table class="keypoints"><thead><tr><th>key point</th>` +
        `<th>verdict</th><th>the answer's words</th></tr></thead><tbody>` +
        e.key_points.map((k) => `<tr><td>${esc(k.point)}</td><td class="kp-${esc(k.verdict)}">` +
          `${esc(k.verdict)}</td><td>${esc(k.words)}</td></tr>`).join("") +
        `</tbody></table>` : "") +
      (e.judge ? `<p><b>judge:</b> ${esc(e.judge)}</p>` : "") +
      `<p class="muted">${esc(e.system)} &middot; ended: ${esc(e.termination)} &middot; ` +
      `wall ${e.wall.toFixed(2)} s, model ${e.model.toFixed(2)} s, tool ${e.tool.toFixed(3)} s` +
      ` &middot; ${e.calls} LLM calls, ${e.tokens} tokens</p>` + callLine(e) + prompt + tree +
      steps + llm;
  }
  return { esc, episodeHTML };
})();

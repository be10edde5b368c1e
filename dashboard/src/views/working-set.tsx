import { useEffect, useState } from "preact/hooks";
import { callAll, type Session } from "../api";
import { HBarChart } from "../charts/charts";
import { href } from "../router";
import { ErrorNote, formatNumber, Loading, Section, useAsync } from "../ui";

interface Segment {
  segment_id: string;
  text: string;
  type: string;
  tokens: number;
  pinned: boolean;
  tags: string[];
}
interface Candidate {
  segment_id: string;
  score: number;
  tokens: number;
  reason: string;
  segment_type: string;
}
interface ProjectStorage {
  project: string;
  items: number;
  tokens: number;
  stashed_tokens: number;
}

/** Tokens by project; for one project its pinned and stashed segments and the GC's pruning candidates. */
export function WorkingSetView({ session }: { session: Session }) {
  const overview = useAsync(
    () =>
      callAll<[{ projects: string[] }, { projects: ProjectStorage[] }]>(session.key, [
        { name: "context_list_projects" },
        { name: "get_usage_report", args: { period: "day" } },
      ]),
    [session.key],
  );
  const [project, setProject] = useState("");
  const projects = overview.data?.[0].projects ?? [];
  useEffect(() => {
    if (!project && projects.length > 0) setProject(projects[0]!);
  }, [projects.join("\u0000")]);
  const storage = overview.data?.[1].projects ?? [];
  return (
    <>
      <h1>Working set</h1>
      <ErrorNote error={overview.error} />
      <Loading when={overview.loading} />
      <Section title="Tokens by project">
        {storage.length === 0 ? (
          <p class="muted">Nothing stored yet.</p>
        ) : (
          <HBarChart
            label="Tokens stored per project: in the working set and stashed"
            rows={storage.map((p) => ({ label: p.project, values: [p.tokens - p.stashed_tokens, p.stashed_tokens] }))}
            series={["working set", "stashed"]}
          />
        )}
      </Section>
      {projects.length > 0 && (
        <div class="field inline">
          <label for="ws-project">Project</label>
          <select id="ws-project" value={project} onChange={(e) => setProject(e.currentTarget.value)}>
            {projects.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
      )}
      {project && <ProjectSet session={session} project={project} />}
    </>
  );
}

function ProjectSet({ session, project }: { session: Session; project: string }) {
  const data = useAsync(
    () =>
      callAll<
        [
          { segments: Segment[]; total_tokens: number; segment_count: number; gc_candidates: Candidate[] },
          { segments: Segment[]; total_matches: number },
        ]
      >(session.key, [
        { name: "context_get_working_set", args: { project_id: project, limit: 1000, include_gc_candidates: true } },
        { name: "context_search_stashed", args: { project_id: project, limit: 50 } },
      ]),
    [session.key, project],
  );
  if (data.error) return <ErrorNote error={data.error} />;
  if (!data.data) return <Loading when={true} />;
  const [set, stashed] = data.data;
  const pinned = set.segments.filter((s) => s.pinned);
  return (
    <>
      <p class="muted">
        {formatNumber(set.segment_count)} segment{set.segment_count === 1 ? "" : "s"}, {formatNumber(set.total_tokens)}{" "}
        tokens in the working set of {project}.
      </p>
      <Section title={`Pinned (${pinned.length})`}>
        <SegmentList segments={pinned} empty="No pinned segments." />
      </Section>
      <Section title={`Stashed (${stashed.total_matches})`}>
        <SegmentList segments={stashed.segments} empty="Nothing stashed." />
      </Section>
      <Section title={`GC candidates (${set.gc_candidates.length})`}>
        {set.gc_candidates.length === 0 ? (
          <p class="muted">No pruning candidates: everything is pinned, referenced or recently used.</p>
        ) : (
          <table class="grid">
            <thead>
              <tr>
                <th scope="col">Segment</th>
                <th scope="col">Type</th>
                <th scope="col">Score</th>
                <th scope="col">Tokens</th>
                <th scope="col">Why</th>
              </tr>
            </thead>
            <tbody>
              {set.gc_candidates.map((c) => (
                <tr key={c.segment_id}>
                  <td>
                    <a href={href("memory", c.segment_id)}>{c.segment_id.slice(0, 8)}</a>
                  </td>
                  <td>{c.segment_type}</td>
                  <td>{formatNumber(c.score)}</td>
                  <td>{formatNumber(c.tokens)}</td>
                  <td>{c.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </>
  );
}

function SegmentList({ segments, empty }: { segments: Segment[]; empty: string }) {
  if (segments.length === 0) return <p class="muted">{empty}</p>;
  return (
    <ul class="rows">
      {segments.map((s) => (
        <li key={s.segment_id} class="row">
          <a class="row-text" href={href("memory", s.segment_id)}>
            {s.text.length > 240 ? `${s.text.slice(0, 240)}…` : s.text}
          </a>
          <div class="meta">
            <span>{s.type}</span>
            <span>{formatNumber(s.tokens)} tokens</span>
          </div>
        </li>
      ))}
    </ul>
  );
}

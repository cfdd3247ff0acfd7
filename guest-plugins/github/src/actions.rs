//! GitHub Actions as the catalog's pipelines: the workflow runs of one
//! commit (a pull request's head, or a branch's latest) are its pipeline,
//! their jobs its jobs; job logs, and re-running a job.

use provider_kit::api::{encode, flag, optional, required, result, with_query};
use provider_kit::logs::{LogView, error_lines};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::GitHub;
use crate::tools::{MAX_PER_PAGE, number};

/// Workflow runs of one commit whose jobs are read.
const MAX_RUNS: usize = 10;
/// Failed jobs whose logs `get_pipeline` reads for error lines.
const MAX_FAILED_LOGS: usize = 3;
/// Error lines kept per failed job.
const ERROR_LINES: usize = 10;

fn failed(conclusion: &Value) -> bool {
    matches!(
        conclusion.as_str(),
        Some("failure" | "timed_out" | "startup_failure")
    )
}

/// A job id: digits only, since it goes into a path.
fn job_id(tool: &str, args: &Value) -> Result<u64, ToolError> {
    let id = required(args, "jobId")?;
    id.parse().map_err(|_| {
        ToolError::InvalidArgs(format!(
            "GitHub {tool}: `jobId` must be a job id from get_pipeline, not `{id}`"
        ))
    })
}

impl GitHub {
    pub fn get_pipeline(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_pipeline";
        let runs_path = format!("/repos/{}/actions/runs", self.repo);
        let (sha, branch, runs) = if let Some(key) = optional(args, "mrKey") {
            let n = number(tool, &key)?;
            let pr = self.api.get(tool, &format!("/repos/{}/pulls/{n}", self.repo))?;
            let sha = pr.body["head"]["sha"].as_str().unwrap_or_default().to_owned();
            let query = [("head_sha", sha.clone()), ("per_page", MAX_PER_PAGE.to_string())];
            let runs = self.api.get(tool, &with_query(&runs_path, &query))?;
            (
                sha,
                pr.body["head"]["ref"].clone(),
                runs.body["workflow_runs"].clone(),
            )
        } else {
            let branch = match optional(args, "branch") {
                Some(b) => b,
                None => {
                    let repo = self.api.get(tool, &format!("/repos/{}", self.repo))?;
                    repo.body["default_branch"].as_str().unwrap_or("main").to_owned()
                }
            };
            let query = [("branch", branch.clone()), ("per_page", MAX_PER_PAGE.to_string())];
            let runs = self.api.get(tool, &with_query(&runs_path, &query))?;
            let list = runs.body["workflow_runs"].as_array().cloned().unwrap_or_default();
            // The newest run names the branch's latest commit; its pipeline
            // is every run of that commit.
            let sha = list
                .first()
                .and_then(|r| r["head_sha"].as_str())
                .unwrap_or_default()
                .to_owned();
            let same: Vec<Value> = list.into_iter().filter(|r| r["head_sha"] == json!(sha)).collect();
            (sha, json!(branch), json!(same))
        };
        let runs = runs.as_array().cloned().unwrap_or_default();
        if runs.is_empty() {
            let summary = format!("no workflow runs for {}", branch.as_str().unwrap_or(&sha));
            return Ok(result(
                summary,
                json!({"branch": branch, "sha": sha, "status": "none", "runs": []}),
            ));
        }
        let with_logs = flag(args, "includeFailedLogs")?.unwrap_or(true);
        let mut logs_left = MAX_FAILED_LOGS;
        let mut out = Vec::new();
        let runs = &runs[..runs.len().min(MAX_RUNS)];
        // Every run's jobs at once: a pipeline of several workflows waits
        // for one round trip, not one per run.
        let paths: Vec<String> = runs
            .iter()
            .map(|run| {
                let path = format!("/repos/{}/actions/runs/{}/jobs", self.repo, run["id"]);
                with_query(&path, &[("per_page", MAX_PER_PAGE.to_string())])
            })
            .collect();
        for (run, jobs) in runs.iter().zip(self.api.get_all(tool, &paths)) {
            let jobs = jobs?;
            let mut list = Vec::new();
            for j in jobs.body["jobs"].as_array().cloned().unwrap_or_default() {
                let failed_steps: Vec<Value> = j["steps"]
                    .as_array()
                    .map(|s| {
                        s.iter()
                            .filter(|s| failed(&s["conclusion"]))
                            .map(|s| s["name"].clone())
                            .collect()
                    })
                    .unwrap_or_default();
                let mut job = json!({"id": j["id"].to_string(), "name": j["name"], "status": j["status"],
                                     "conclusion": j["conclusion"], "url": j["html_url"], "failed_steps": failed_steps});
                if with_logs && logs_left > 0 && failed(&j["conclusion"]) {
                    logs_left -= 1;
                    let log = self.job_log(tool, j["id"].as_u64().unwrap_or_default())?;
                    job["error_lines"] = json!(error_lines(&log, ERROR_LINES));
                }
                list.push(job);
            }
            out.push(
                json!({"id": run["id"], "name": run["name"], "status": run["status"],
                            "conclusion": run["conclusion"], "event": run["event"], "url": run["html_url"],
                            "jobs": list}),
            );
        }
        let status = if out.iter().any(|r| r["status"] != json!("completed")) {
            "running"
        } else if out
            .iter()
            .any(|r| failed(&r["conclusion"]) || r["conclusion"] == json!("cancelled"))
        {
            "failed"
        } else {
            "success"
        };
        let summary = format!(
            "{status}: {} workflow run(s) for {} at {}",
            out.len(),
            branch.as_str().unwrap_or(""),
            &sha[..sha.len().min(7)]
        );
        Ok(result(
            summary,
            json!({"branch": branch, "sha": sha, "status": status, "runs": out}),
        ))
    }

    /// A job's log as text (GitHub redirects to storage; the API client
    /// follows).
    fn job_log(&self, tool: &str, id: u64) -> Result<String, ToolError> {
        let path = format!(
            "/repos/{}/actions/jobs/{}/logs",
            self.repo,
            encode(&id.to_string())
        );
        Ok(self.api.get(tool, &path)?.text)
    }

    pub fn get_job_logs(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_job_logs";
        let id = job_id(tool, args)?;
        let view = LogView::from_args(args)?;
        let log = self.job_log(tool, id)?;
        let mut value = view.render(&log);
        value["jobId"] = json!(id.to_string());
        let summary = format!(
            "job {id}: {} of {} line(s) ({})",
            value["lines"].as_array().map_or(0, Vec::len),
            value["total_lines"],
            value["mode"].as_str().unwrap_or("")
        );
        Ok(result(summary, value))
    }

    pub fn run_pipeline_job(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "run_pipeline_job";
        let id = job_id(tool, args)?;
        let path = format!("/repos/{}/actions/jobs/{id}/rerun", self.repo);
        self.api.send(tool, "POST", &path, Some(&json!({})))?;
        Ok(result(
            format!("re-running job {id} (a new attempt of its workflow run)"),
            json!({"jobId": id.to_string(), "status": "queued"}),
        ))
    }
}

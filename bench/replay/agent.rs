//! One replayed agent session: a seeded walk over the chains the value
//! models declare (glob → read, grep → read, search → page, list issues →
//! issue → comments) with writes mixed in, think time between calls, and
//! every read checked against the backend's state at the time of the call.
//!
//! When an agent follows a list up, it opens one of the top three results
//! (as many as the host prefetches from one link) with the mix's weights,
//! and then, with the mix's `more` probability each time, another of them
//! (an agent that has opened one file of a listing often opens the next).

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};
use toolhost::{CallControl, Toolhost};

use crate::world::{FILES, GLOBS, WORDS, World};

/// How often each chain is followed.
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    pub name: &'static str,
    pub glob_read: f64,
    pub grep_read: f64,
    pub issues_issue: f64,
    pub issue_comments: f64,
    pub search_page: f64,
    /// How often the first, second and third result is the one opened.
    pub pick: [f64; 3],
    /// After opening a result, the chance of opening another of the top three.
    pub more: f64,
}

/// The transition probabilities the value models declare (the native
/// tools' and the provider enrichers'): the agent the host is tuned for.
pub const CORPUS: Mix = Mix {
    name: "corpus",
    glob_read: 0.32,
    grep_read: 0.35,
    issues_issue: 0.55,
    issue_comments: 0.50,
    search_page: 0.55,
    pick: [0.60, 0.25, 0.15],
    more: 0.3,
};

/// An agent on a focused task: it nearly always opens what it listed or
/// searched, usually the best match, often a second one.
pub const CHAIN_HEAVY: Mix = Mix {
    name: "chain-heavy",
    glob_read: 0.85,
    grep_read: 0.85,
    issues_issue: 0.85,
    issue_comments: 0.85,
    search_page: 0.85,
    pick: [0.75, 0.15, 0.10],
    more: 0.5,
};

/// What one session did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub calls: u64,
    pub waited: Duration,
    /// Results that differed from the backend's state at the time.
    pub stale: u64,
}

impl Tally {
    pub fn add(&mut self, other: Tally) {
        self.calls += other.calls;
        self.waited += other.waited;
        self.stale += other.stale;
    }
}

enum Next {
    Fresh,
    Read(Vec<String>),
    Issue(Vec<String>),
    Comments(String),
    Page(Vec<String>),
}

pub struct Agent<'a> {
    pub host: &'a Toolhost,
    pub world: &'a World,
    pub session: usize,
    pub mix: Mix,
    pub rng: fastrand::Rng,
    /// Multiplies think times (and the world's latencies were scaled alike).
    pub scale: f64,
    pub tally: Tally,
}

impl Agent<'_> {
    pub async fn run(mut self, calls: usize) -> Result<Tally> {
        let mut next = Next::Fresh;
        for _ in 0..calls {
            let think = 300 + self.rng.u64(0..1200);
            tokio::time::sleep(Duration::from_secs_f64(think as f64 * self.scale / 1000.0)).await;
            next = match next {
                Next::Fresh => self.fresh().await?,
                Next::Read(mut paths) => {
                    let path = self.pick(&mut paths);
                    self.read(&path).await?;
                    self.another(paths, Next::Read)
                }
                Next::Issue(mut keys) => {
                    let key = self.pick(&mut keys);
                    self.issue(&key).await?
                }
                Next::Comments(key) => {
                    self.call("get_issue_comments", json!({ "key": key })).await?;
                    Next::Fresh
                }
                Next::Page(mut ids) => {
                    let id = self.pick(&mut ids);
                    self.page(&id).await?;
                    self.another(ids, Next::Page)
                }
            };
        }
        Ok(self.tally)
    }

    /// Call `tool` as the agent does, timing the wait.
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        let start = Instant::now();
        let out = self
            .host
            .call_tool(tool, args.clone(), &CallControl::new("replay"))
            .await;
        self.tally.waited += start.elapsed();
        self.tally.calls += 1;
        match out {
            Ok(out) if !out.is_error => Ok(out.structured().unwrap_or(Value::Null)),
            Ok(out) => bail!("{tool} {args}: {}", out.text()),
            Err(e) => bail!("{tool} {args}: {e:?}"),
        }
    }

    fn follow(&mut self, p: f64) -> bool {
        self.rng.f64() < p
    }

    /// Take one of the top three items, by the mix's weights (renormalised
    /// when there are fewer); the rest keep their order.
    fn pick(&mut self, items: &mut Vec<String>) -> String {
        let weights = &self.mix.pick[..items.len().min(3)];
        let mut x = self.rng.f64() * weights.iter().sum::<f64>();
        let mut chosen = weights.len() - 1;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                chosen = i;
                break;
            }
            x -= w;
        }
        items.remove(chosen)
    }

    /// After opening one result: maybe another of those left.
    fn another(&mut self, left: Vec<String>, next: fn(Vec<String>) -> Next) -> Next {
        let p = self.mix.more;
        self.chain(p, left, next)
    }

    fn dir(&self) -> String {
        format!("s{}", self.session)
    }

    async fn fresh(&mut self) -> Result<Next> {
        let s = self.session;
        let dir = self.dir();
        // glob, grep, issues, search: 2 each; each kind of write: 0.5.
        let roll = self.rng.f64() * 10.0;
        Ok(match roll {
            r if r < 2.0 => {
                let pattern = GLOBS[self.rng.usize(0..GLOBS.len())];
                let found = self
                    .call("glob", json!({"pattern": pattern, "path": dir}))
                    .await?;
                let paths = strings(&found["paths"]);
                self.chain(self.mix.glob_read, paths, Next::Read)
            }
            r if r < 4.0 => {
                let word = WORDS[self.rng.usize(0..WORDS.len())];
                let found = self.call("grep", json!({"pattern": word, "path": dir})).await?;
                let mut paths: Vec<String> = Vec::new();
                for m in found["matches"].as_array().into_iter().flatten() {
                    if let Some(p) = m["path"].as_str()
                        && !paths.iter().any(|q| q == p)
                    {
                        paths.push(p.to_owned());
                    }
                }
                self.chain(self.mix.grep_read, paths, Next::Read)
            }
            r if r < 6.0 => {
                let found = self
                    .call("get_issues", json!({"search": format!("S{s}")}))
                    .await?;
                let keys = found["issues"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|i| i["key"].as_str().map(str::to_owned))
                    .collect();
                self.chain(self.mix.issues_issue, keys, Next::Issue)
            }
            r if r < 8.0 => {
                let found = self
                    .call("search_knowledge_base", json!({"query": format!("S{s}")}))
                    .await?;
                let ids = found["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["id"].as_str().map(str::to_owned))
                    .collect();
                self.chain(self.mix.search_page, ids, Next::Page)
            }
            r if r < 8.5 => {
                let path = self.some_file();
                let content = format!("// rewritten by the agent, {}\n", self.rng.u64(..));
                self.call("write", json!({"path": path, "content": content}))
                    .await?;
                Next::Fresh
            }
            r if r < 9.0 => {
                // The agent's own editor: the host is not told.
                let path = self.some_file();
                let text = format!("// edited outside the host, {}\n", self.rng.u64(..));
                self.world.edit_behind(&path, &text)?;
                Next::Fresh
            }
            r if r < 9.5 => {
                let key = format!("S{s}-{}", 1 + self.rng.usize(0..3));
                let title = format!("retitled {}", self.rng.u64(..));
                self.call("update_issue", json!({"key": key, "title": title}))
                    .await?;
                Next::Fresh
            }
            _ => {
                let id = format!("s{s}p{}", 1 + self.rng.usize(0..3));
                let content = format!("rewritten {}", self.rng.u64(..));
                self.call(
                    "update_knowledge_base_page",
                    json!({"pageId": id, "content": content}),
                )
                .await?;
                Next::Fresh
            }
        })
    }

    fn chain(&mut self, p: f64, items: Vec<String>, next: fn(Vec<String>) -> Next) -> Next {
        if !items.is_empty() && self.follow(p) {
            next(items)
        } else {
            Next::Fresh
        }
    }

    fn some_file(&mut self) -> String {
        format!("{}/src/mod{}.rs", self.dir(), self.rng.usize(0..FILES))
    }

    async fn read(&mut self, path: &str) -> Result<()> {
        let got = self.call("read", json!({ "path": path })).await?;
        if got["content"].as_str() != self.world.file(path).as_deref() {
            self.tally.stale += 1;
        }
        Ok(())
    }

    async fn issue(&mut self, key: &str) -> Result<Next> {
        let got = self.call("get_issue", json!({ "key": key })).await?;
        if got["title"].as_str() != self.world.title(key).as_deref() {
            self.tally.stale += 1;
        }
        Ok(if self.follow(self.mix.issue_comments) {
            Next::Comments(key.to_owned())
        } else {
            Next::Fresh
        })
    }

    async fn page(&mut self, id: &str) -> Result<()> {
        let got = self
            .call("get_knowledge_base_page", json!({ "pageId": id }))
            .await?;
        if got["content"].as_str() != self.world.page(id).as_deref() {
            self.tally.stale += 1;
        }
        Ok(())
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

//! The seven provider plugins' manifests as tests give them: each with the
//! configuration it needs to load and, for the full plugins that call their
//! vendor's API, the grant of it.

pub const JIRA: &str = r#"
[config]
host = "acme.atlassian.net"
priorities = ["Medium", "Highest", "Low", "High", "Lowest"]
link_types = ["Blocks", "Relates"]
structures = [{ id = 12, name = "Roadmap", description = "Quarterly plan" }, { id = 14, name = "Ops" }]

[[config.projects]]
key = "WEB"
components = ["checkout", "api"]
issue_types = [{ name = "Story" }, { name = "Bug" }, { name = "Sub-task", subtask = true }]
custom_fields = [
  { id = "customfield_100", name = "Story Points", type = "number" },
  { id = "customfield_200", name = "Team", type = "select", options = [{ id = "1", name = "Red" }, { id = "2", name = "Blue" }] },
  { id = "customfield_300", name = "Epic Link", type = "text" },
  { id = "customfield_301", name = "Sprint", type = "number" },
  { id = "customfield_400", name = "Платформа", type = "multi-select", options = [{ id = "7", name = "iOS" }, { id = "8", name = "Web" }] },
]

[[config.projects]]
key = "API"
components = ["gateway", "api"]
issue_types = [{ name = "Task" }, { name = "Bug" }]
custom_fields = [
  { id = "customfield_900", name = "Team", type = "text" },
  { id = "customfield_901", name = "Epic Link", type = "text" },
]

[grants]
http = ["acme.atlassian.net"]
"#;

/// GitHub's plugin runs its tools too: it needs the repository and its API.
pub const GITHUB: &str =
    "[config]\nowner = \"acme\"\nrepo = \"widgets\"\n[grants]\nhttp = [\"https://api.github.com\"]\n";

/// GitLab's plugin runs its tools too: its project and its API.
pub const GITLAB: &str = "[config]\nproject = \"acme/widgets\"\n[grants]\nhttp = [\"https://gitlab.com\"]\n";

pub const CLICKUP: &str = r#"
[config]
statuses = ["to do", "in progress", "done"]
custom_fields = [
  { id = "cf-team", name = "Team", type = "drop_down", options = [{ name = "Red", orderindex = 0 }, { name = "Blue", orderindex = 1 }] },
  { id = "cf-tags", name = "Tags", type = "labels", options = [{ id = "l1", name = "ux" }, { id = "l2", name = "perf" }] },
  { id = "cf-est", name = "Estimate", type = "currency" },
  { id = "cf-ok", name = "Approved", type = "checkbox" },
  { id = "cf-goals", name = "Goals", type = "text" },
  { id = "cf-x", name = "Mystery", type = "unknown" },
]
"#;

/// The seven providers in one directory, as a user would drop them in:
/// (file stem, guest crate, manifest), in registration order.
pub const BUNDLE: [(&str, &str, Option<&str>); 7] = [
    ("10-github", "github", Some(GITHUB)),
    ("20-gitlab", "gitlab", Some(GITLAB)),
    ("30-jira", "jira", Some(JIRA)),
    ("40-confluence", "confluence", None),
    ("50-clickup", "clickup", Some(CLICKUP)),
    ("60-linear", "linear", None),
    ("70-fireflies", "fireflies", None),
];

//! Who may call which tool ([`Policy`]): a set of Cedar policies, read
//! from `[policy] file`, deciding each call and each caller's tool list.
//! Owns the policy file's reading and its bounds, the entities a request is
//! made of, and the decision ([`Decision`]) with the rules that made it;
//! not when a call is decided (`call`, `toolhost`), nor what is recorded
//! of it (`audit`).
//!
//! A request is: the principal `Toolhost::User::"SUBJECT"`, with the
//! attributes `subject` and `via` (how the host knows the caller) and each
//! claim `[auth] identity_claims` keeps, by its name; a `groups` claim (a
//! string or a list of strings) also makes the caller a member of
//! `Toolhost::Group::"NAME"` for each. The action is
//! `Toolhost::Action::"call"`. The resource is `Toolhost::Tool::"NAME"`,
//! with `name`, `source` (`native`, `plugin`, `upstream` or `catalog`),
//! `backend` (the plugin or upstream server that runs it, `native` for the
//! host's), `category` (empty if none) and `side_effect` (from its value
//! model: `pure`, `read-only`, `mutates-local`, `mutates-external`,
//! `indeterminate`). The context is `args`, the call's arguments as a
//! record (after coercion to the tool's schema), and `complete`, false
//! when some of them were left out by the bounds below.
//!
//! Cedar denies what no rule permits, and a `forbid` overrides any
//! `permit`. Where Cedar skips a rule whose evaluation failed (an
//! attribute the caller does not have, a comparison of a string with a
//! number), a failed `forbid` here denies: a rule meant to stop a call
//! never lets it through by failing. A failed `permit` grants nothing,
//! as in Cedar.
//!
//! A caller's tool list holds each tool some call could be allowed: one a
//! `forbid` that does not read the arguments denies, or that no `permit`
//! could grant, is left out; one whose rules read the arguments is listed
//! and decided per call. (The list is decided with an empty context: a
//! rule reading `context.args` fails there, which is what marks it as
//! depending on the arguments.)
//!
//! Bounded: the file (at most [`MAX_POLICY_BYTES`]), and the arguments
//! made into the context: at most [`MAX_CONTEXT_DEPTH`] levels, 1,024
//! values and 64 KiB of strings, a string at most 4 KiB. What is past a
//! bound is left out (a list with anything left out is left out whole, so
//! `contains` never misses what was cut) and `complete` is false; a rule
//! that reads what was left out fails, so a `forbid` on it denies. A
//! `null` is an absent argument; a number that is not a 64-bit integer
//! is its JSON text, a string.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use cedar_policy::{
    AuthorizationError, Authorizer, Context, Decision as CedarDecision, Effect, Entities, Entity, EntityId,
    EntityTypeName, EntityUid, PolicyId, PolicySet, Request, Response, RestrictedExpression,
};
use miette::Diagnostic;
use serde::Serialize;
use serde_json::{Map, Value};

use super::caller::Caller;
use crate::bounds::label;
use crate::value_model::SideEffect;

/// The largest policy file read, in bytes.
pub const MAX_POLICY_BYTES: u64 = 256 << 10;
/// Levels of the arguments made into the context; deeper values are left
/// out.
pub const MAX_CONTEXT_DEPTH: usize = 8;
/// Values of the arguments made into the context; the rest are left out.
const MAX_CONTEXT_VALUES: usize = 1024;
/// Bytes of strings (keys and values) made into the context.
const MAX_CONTEXT_BYTES: usize = 64 << 10;
/// The longest string made into the context.
const MAX_CONTEXT_STRING: usize = 4 << 10;
/// The most groups a caller is made a member of.
const MAX_GROUPS: usize = 64;
/// The claim whose values are the caller's groups.
const GROUPS_CLAIM: &str = "groups";

/// A set of Cedar policies, parsed and checked, with its rules' names.
#[derive(Debug)]
pub struct Policy {
    set: PolicySet,
    /// Each rule's name: its `@id("…")` annotation, else Cedar's id
    /// (`policy0`, … in the order of the file).
    names: HashMap<PolicyId, String>,
    /// The file it was read from, as messages name it.
    origin: String,
}

/// A policy file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file cannot be read.
    #[error("cannot read the policy file {origin}: {source}")]
    Read {
        /// The file.
        origin: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_POLICY_BYTES`].
    #[error("the policy file {origin} holds more than {MAX_POLICY_BYTES} bytes")]
    TooLarge {
        /// The file.
        origin: String,
    },
    /// The file is not a set of Cedar policies toolhost can use.
    #[error("the policy file {origin}, line {line}: {message}")]
    Invalid {
        /// The file.
        origin: String,
        /// The line at fault (1 when the error names no place).
        line: usize,
        /// What is wrong there.
        message: String,
    },
}

/// How a call was decided, with the rules that decided it: for an allowed
/// call the `permit` rules that granted it; for a denied one the `forbid`
/// rules that denied it, or failed to be evaluated, or none when no rule
/// permits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// `allow` or `deny`.
    pub decision: Verdict,
    /// The rules that decided it, by name.
    pub rules: Vec<String>,
    /// Why a denied call is denied, as the caller reads it; `None` for an
    /// allowed one.
    #[serde(skip)]
    reason: Option<String>,
}

/// Allowed or denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A rule permits the call and no rule forbids it.
    Allow,
    /// A rule forbids the call, or none permits it.
    Deny,
}

/// Where a tool comes from, as the policy's resource says.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Origin<'a> {
    /// The host's own tools.
    Native,
    /// A tool plugin's own tool, by the plugin's name.
    Plugin(&'a str),
    /// An upstream server's tool, by the server's name.
    Upstream(&'a str),
    /// A base-catalog tool, by the backend (plugin or server) bound to it.
    Catalog(&'a str),
}

/// What the policy knows of a tool: the resource of a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolFacts<'a> {
    pub(crate) name: &'a str,
    pub(crate) origin: Origin<'a>,
    pub(crate) category: Option<&'a str>,
    pub(crate) side_effect: SideEffect,
}

impl Policy {
    /// Read the policy file at `path`, within [`MAX_POLICY_BYTES`].
    pub fn read(path: &Path) -> Result<Self, PolicyError> {
        let origin = path.display().to_string();
        let read = |source| PolicyError::Read {
            origin: origin.clone(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read)?;
        let mut bytes = Vec::new();
        file.take(MAX_POLICY_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        if bytes.len() as u64 > MAX_POLICY_BYTES {
            return Err(PolicyError::TooLarge { origin });
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let line = line_of(&String::from_utf8_lossy(&e.into_bytes()[..offset]), offset);
            PolicyError::Invalid {
                origin: origin.clone(),
                line,
                message: "not UTF-8 text".into(),
            }
        })?;
        Self::parse(&text, &origin)
    }

    /// The policies of `text`, named `origin` in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, PolicyError> {
        let invalid = |line, message| PolicyError::Invalid {
            origin: origin.to_owned(),
            line,
            message,
        };
        let set = PolicySet::from_str(text).map_err(|e| {
            let offset = e
                .labels()
                .and_then(|mut labels| labels.next())
                .map(|l| l.offset());
            let message = match e.help() {
                Some(help) => format!("{e} ({help})"),
                None => e.to_string(),
            };
            invalid(offset.map_or(1, |o| line_of(text, o)), message)
        })?;
        if let Some(template) = set.templates().next() {
            return Err(invalid(
                1,
                format!(
                    "`{}` is a template (it has a `?principal` or `?resource` slot): write each rule for its principal and resource",
                    template.id()
                ),
            ));
        }
        let mut names = HashMap::new();
        let mut taken = HashSet::new();
        for policy in set.policies() {
            let name = policy
                .annotation("id")
                .map_or_else(|| policy.id().to_string(), str::to_owned);
            if !taken.insert(name.clone()) {
                return Err(invalid(1, format!("two rules are named {}", label(&name))));
            }
            names.insert(policy.id().clone(), name);
        }
        Ok(Self {
            set,
            names,
            origin: origin.to_owned(),
        })
    }

    /// The file it was read from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// How many rules it holds.
    pub fn rules(&self) -> usize {
        self.names.len()
    }

    /// Whether `caller` may call `tool` with `args`.
    pub(crate) fn decide(
        &self,
        caller: &Caller,
        tool: &ToolFacts<'_>,
        args: &Map<String, Value>,
    ) -> Decision {
        let context = match context(args) {
            Ok(context) => context,
            Err(e) => return self.unusable(caller, tool, &e),
        };
        let response = match self.evaluate(caller, tool, context) {
            Ok(response) => response,
            Err(e) => return self.unusable(caller, tool, &e),
        };
        let who = (label(caller.subject()), label(tool.name));
        let reasons = self.named(response.diagnostics().reason());
        let failed_forbids = self.named(
            response
                .diagnostics()
                .errors()
                .map(failed_rule)
                .filter(|id| self.effect(id) == Some(Effect::Forbid)),
        );
        let deny = |rules: Vec<String>, reason: String| Decision {
            decision: Verdict::Deny,
            rules,
            reason: Some(reason),
        };
        match response.decision() {
            CedarDecision::Allow if failed_forbids.is_empty() => Decision {
                decision: Verdict::Allow,
                rules: reasons,
                reason: None,
            },
            // A forbid that could not be evaluated denies, as one that held.
            CedarDecision::Allow => {
                let reason = format!(
                    "Tool {} is denied to {}: policy rule {} could not be evaluated for this call",
                    who.1,
                    who.0,
                    listed(&failed_forbids)
                );
                deny(failed_forbids, reason)
            }
            CedarDecision::Deny if !reasons.is_empty() => {
                let reason = format!(
                    "Tool {} is denied to {} by policy rule {}",
                    who.1,
                    who.0,
                    listed(&reasons)
                );
                deny(reasons, reason)
            }
            CedarDecision::Deny => {
                let reason = format!("Tool {} is denied to {}: no policy rule permits it", who.1, who.0);
                deny(failed_forbids, reason)
            }
        }
    }

    /// Whether `tool` is shown in `caller`'s tool list: some call of it
    /// could be allowed (see the module's documentation).
    pub(crate) fn lists(&self, caller: &Caller, tool: &ToolFacts<'_>) -> bool {
        let response = match self.evaluate(caller, tool, Context::empty()) {
            Ok(response) => response,
            Err(e) => {
                tracing::error!(tool = tool.name, "{e}: the tool is not listed");
                return false;
            }
        };
        let diagnostics = response.diagnostics();
        match response.decision() {
            CedarDecision::Allow => true,
            // A forbid that held without reading the arguments: never.
            CedarDecision::Deny if diagnostics.reason().next().is_some() => false,
            // A permit that failed may hold for some arguments.
            CedarDecision::Deny => diagnostics
                .errors()
                .any(|e| self.effect(failed_rule(e)) == Some(Effect::Permit)),
        }
    }

    fn evaluate(&self, caller: &Caller, tool: &ToolFacts<'_>, context: Context) -> Result<Response, String> {
        let (principal, groups) = principal(caller)?;
        let resource = resource(tool)?;
        let action = uid("Toolhost::Action", "call")?;
        let request = Request::new(principal.uid(), action, resource.uid(), context, None)
            .map_err(|e| format!("the policy request cannot be made: {e}"))?;
        let entities = Entities::from_entities([principal, resource].into_iter().chain(groups), None)
            .map_err(|e| format!("the policy's entities cannot be made: {e}"))?;
        Ok(Authorizer::new().is_authorized(&request, &self.set, &entities))
    }

    /// A call that could not be put to the policy is denied, with why.
    fn unusable(&self, caller: &Caller, tool: &ToolFacts<'_>, error: &str) -> Decision {
        Decision {
            decision: Verdict::Deny,
            rules: Vec::new(),
            reason: Some(format!(
                "Tool {} is denied to {}: {error}",
                label(tool.name),
                label(caller.subject())
            )),
        }
    }

    fn effect(&self, id: &PolicyId) -> Option<Effect> {
        self.set.policy(id).map(|p| p.effect())
    }

    /// The names of the rules `ids`, each once, in the file's order.
    fn named<'a>(&self, ids: impl Iterator<Item = &'a PolicyId>) -> Vec<String> {
        let mut names: Vec<String> = ids.filter_map(|id| self.names.get(id).cloned()).collect();
        names.sort_by_key(|name| {
            self.set
                .policies()
                .position(|p| self.names.get(p.id()) == Some(name))
        });
        names.dedup();
        names
    }
}

impl Decision {
    /// Whether the call may run.
    pub fn allowed(&self) -> bool {
        self.decision == Verdict::Allow
    }

    /// Why a denied call is denied, as its caller reads it.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

/// The rule whose evaluation failed with `error`.
fn failed_rule(error: &AuthorizationError) -> &PolicyId {
    match error {
        AuthorizationError::PolicyEvaluationError(e) => e.policy_id(),
    }
}

/// `names`, quoted and joined.
fn listed(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{}\"", label(n))).collect();
    quoted.join(", ")
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
}

fn uid(kind: &str, id: &str) -> Result<EntityUid, String> {
    let kind = EntityTypeName::from_str(kind).map_err(|e| format!("entity type {kind}: {e}"))?;
    Ok(EntityUid::from_type_name_and_id(kind, EntityId::new(id)))
}

/// The caller as the policy's principal, and the groups it is a member of.
fn principal(caller: &Caller) -> Result<(Entity, Vec<Entity>), String> {
    let mut attrs = HashMap::new();
    let mut budget = Budget::default();
    for (name, value) in caller.claims() {
        if let Some(value) = restricted(value, 0, &mut budget) {
            attrs.insert(name.clone(), value);
        }
    }
    // The host's own facts over a claim of the same name.
    attrs.insert(
        "subject".to_owned(),
        RestrictedExpression::new_string(caller.subject().to_owned()),
    );
    let via = serde_json::to_value(caller.via())
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    attrs.insert("via".to_owned(), RestrictedExpression::new_string(via));
    let group_names: Vec<&str> = match caller.claims().get(GROUPS_CLAIM) {
        Some(Value::String(group)) => vec![group.as_str()],
        Some(Value::Array(groups)) => groups.iter().filter_map(Value::as_str).take(MAX_GROUPS).collect(),
        _ => Vec::new(),
    };
    let groups = group_names
        .into_iter()
        .map(|name| uid("Toolhost::Group", name))
        .collect::<Result<Vec<_>, _>>()?;
    let entity = Entity::new(
        uid("Toolhost::User", caller.subject())?,
        attrs,
        groups.iter().cloned().collect(),
    )
    .map_err(|e| format!("the caller cannot be made a principal: {e}"))?;
    let groups = groups
        .into_iter()
        .map(|g| Entity::new_no_attrs(g, HashSet::new()))
        .collect();
    Ok((entity, groups))
}

/// The tool as the policy's resource.
fn resource(tool: &ToolFacts<'_>) -> Result<Entity, String> {
    let (source, backend) = match tool.origin {
        Origin::Native => ("native", "native"),
        Origin::Plugin(name) => ("plugin", name),
        Origin::Upstream(name) => ("upstream", name),
        Origin::Catalog(name) => ("catalog", name),
    };
    let side_effect = serde_json::to_value(tool.side_effect)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let string = |s: &str| RestrictedExpression::new_string(s.to_owned());
    let attrs = HashMap::from([
        ("name".to_owned(), string(tool.name)),
        ("source".to_owned(), string(source)),
        ("backend".to_owned(), string(backend)),
        ("category".to_owned(), string(tool.category.unwrap_or_default())),
        (
            "side_effect".to_owned(),
            RestrictedExpression::new_string(side_effect),
        ),
    ]);
    Entity::new(uid("Toolhost::Tool", tool.name)?, attrs, HashSet::new())
        .map_err(|e| format!("the tool cannot be made a resource: {e}"))
}

/// The context of a call with `args`: `args` as a record, within the
/// bounds, and whether they all made it in (`complete`).
fn context(args: &Map<String, Value>) -> Result<Context, String> {
    let mut budget = Budget::default();
    let args = record(args, 0, &mut budget);
    let mut pairs = vec![(
        "complete".to_owned(),
        RestrictedExpression::new_bool(budget.complete && args.is_some()),
    )];
    if let Some(args) = args {
        pairs.push(("args".to_owned(), args));
    }
    Context::from_pairs(pairs).map_err(|e| format!("the call's context cannot be made: {e}"))
}

/// What is left of the context's bounds as the arguments are made into it.
struct Budget {
    values: usize,
    bytes: usize,
    /// Nothing was left out yet.
    complete: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            values: MAX_CONTEXT_VALUES,
            bytes: MAX_CONTEXT_BYTES,
            complete: true,
        }
    }
}

impl Budget {
    /// Take one value of `bytes` of text, if the bounds allow it.
    fn take(&mut self, bytes: usize) -> bool {
        let fits = self.values > 0 && bytes <= MAX_CONTEXT_STRING && bytes <= self.bytes;
        if fits {
            self.values -= 1;
            self.bytes -= bytes;
        } else {
            self.complete = false;
        }
        fits
    }
}

/// `value` as a Cedar value at `depth`, or `None` if it is null or past
/// the bounds (then `budget` is marked incomplete).
fn restricted(value: &Value, depth: usize, budget: &mut Budget) -> Option<RestrictedExpression> {
    let text = match value {
        Value::String(s) => s.len(),
        _ => 0,
    };
    if value.is_null() || !budget.take(text) {
        return None;
    }
    match value {
        Value::Null => None,
        Value::Bool(b) => Some(RestrictedExpression::new_bool(*b)),
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => RestrictedExpression::new_long(i),
            None => RestrictedExpression::new_string(n.to_string()),
        }),
        Value::String(s) => Some(RestrictedExpression::new_string(s.clone())),
        _ if depth + 1 >= MAX_CONTEXT_DEPTH => {
            budget.complete = false;
            None
        }
        Value::Array(items) => {
            let mut set = Vec::with_capacity(items.len().min(MAX_CONTEXT_VALUES));
            for item in items.iter().filter(|i| !i.is_null()) {
                // One item left out leaves the list out: a `contains` must
                // not miss what was cut.
                set.push(restricted(item, depth + 1, budget)?);
            }
            Some(RestrictedExpression::new_set(set))
        }
        Value::Object(map) => record(map, depth + 1, budget),
    }
}

/// `map` as a Cedar record at `depth`; each field past the bounds is left
/// out.
fn record(map: &Map<String, Value>, depth: usize, budget: &mut Budget) -> Option<RestrictedExpression> {
    let mut fields = Vec::new();
    for (key, value) in map {
        if value.is_null() || !budget.take(key.len()) {
            continue;
        }
        if let Some(value) = restricted(value, depth, budget) {
            fields.push((key.clone(), value));
        }
    }
    RestrictedExpression::new_record(fields).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const POLICY: &str = r#"
// Everyone may call every tool.
@id("everyone")
permit (principal, action == Toolhost::Action::"call", resource);

@id("no-writes-for-bob")
forbid (principal == Toolhost::User::"bob", action, resource)
when { resource.side_effect == "mutates-local" };

@id("ops-only-deploys")
forbid (principal, action, resource == Toolhost::Tool::"deploy")
unless { principal in Toolhost::Group::"ops" };

@id("no-secret-paths")
forbid (principal, action, resource == Toolhost::Tool::"read")
when { context.args.path like "*secret*" };
"#;

    fn caller(sub: &str, claims: Value) -> Caller {
        let mut token = claims.as_object().cloned().unwrap_or_default();
        token.insert("sub".into(), json!(sub));
        let wanted: Vec<String> = token.keys().filter(|k| *k != "sub").cloned().collect();
        Caller::verified(token, &wanted).unwrap()
    }

    /// `policy`'s decision on `args` (an object, or null for none).
    fn decide(policy: &Policy, caller: &Caller, tool: &ToolFacts<'_>, args: Value) -> Decision {
        let args = match args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        policy.decide(caller, tool, &args)
    }

    fn tool(name: &str, side_effect: SideEffect) -> ToolFacts<'_> {
        ToolFacts {
            name,
            origin: Origin::Native,
            category: None,
            side_effect,
        }
    }

    #[test]
    fn a_forbid_overrides_a_permit_and_names_its_rule() {
        let policy = Policy::parse(POLICY, "test.cedar").unwrap();
        assert_eq!(policy.rules(), 4);
        let write = tool("write", SideEffect::MutatesLocal);
        let (alice, bob) = (caller("alice", json!({})), caller("bob", json!({})));
        let allowed = decide(&policy, &alice, &write, json!({"path": "a"}));
        assert!(allowed.allowed());
        assert_eq!(allowed.rules, ["everyone"]);
        let denied = decide(&policy, &bob, &write, json!({"path": "a"}));
        assert!(!denied.allowed());
        assert_eq!(denied.rules, ["no-writes-for-bob"]);
        let reason = denied.reason().unwrap();
        assert!(
            reason.contains("\"no-writes-for-bob\"") && reason.contains("bob"),
            "{reason}"
        );
        assert_eq!(
            serde_json::to_value(&denied).unwrap(),
            json!({"decision": "deny", "rules": ["no-writes-for-bob"]})
        );
        // Bob's list leaves the write out; Alice's keeps it.
        assert!(!policy.lists(&bob, &write));
        assert!(policy.lists(&alice, &write));
    }

    #[test]
    fn groups_from_the_token_are_parents() {
        let policy = Policy::parse(POLICY, "test.cedar").unwrap();
        let deploy = tool("deploy", SideEffect::MutatesExternal);
        let ops = caller("carol", json!({"groups": ["dev", "ops"]}));
        let dev = caller("dave", json!({"groups": "dev"}));
        assert!(decide(&policy, &ops, &deploy, Value::Null).allowed());
        let denied = decide(&policy, &dev, &deploy, Value::Null);
        assert_eq!(denied.rules, ["ops-only-deploys"]);
        assert!(!policy.lists(&dev, &deploy));
    }

    #[test]
    fn a_rule_on_the_arguments_lists_the_tool_and_decides_each_call() {
        let policy = Policy::parse(POLICY, "test.cedar").unwrap();
        let read = tool("read", SideEffect::ReadOnly);
        let alice = caller("alice", json!({}));
        assert!(policy.lists(&alice, &read));
        assert!(decide(&policy, &alice, &read, json!({"path": "src/lib.rs"})).allowed());
        let denied = decide(&policy, &alice, &read, json!({"path": "my-secret.txt"}));
        assert_eq!(denied.rules, ["no-secret-paths"]);
        // With no `path`, the forbid cannot be evaluated: it denies.
        let failed = decide(&policy, &alice, &read, json!({}));
        assert!(!failed.allowed(), "{failed:?}");
        assert!(
            failed.reason().unwrap().contains("could not be evaluated"),
            "{failed:?}"
        );
    }

    #[test]
    fn what_no_rule_permits_is_denied_and_unlisted() {
        let policy = Policy::parse(
            r#"permit (principal == Toolhost::User::"alice", action, resource);"#,
            "p",
        )
        .unwrap();
        let ls = tool("ls", SideEffect::ReadOnly);
        let bob = caller("bob", json!({}));
        let denied = decide(&policy, &bob, &ls, Value::Null);
        assert!(!denied.allowed() && denied.rules.is_empty());
        assert!(denied.reason().unwrap().contains("no policy rule permits"));
        assert!(!policy.lists(&bob, &ls));
        // Unnamed rules are named by Cedar's ids.
        let allowed = decide(&policy, &caller("alice", json!({})), &ls, Value::Null);
        assert_eq!(allowed.rules, ["policy0"]);
    }

    #[test]
    fn arguments_past_the_bounds_are_left_out_and_the_context_says_so() {
        let policy = Policy::parse(
            r#"
@id("all") permit (principal, action, resource);
@id("strict") forbid (principal, action, resource) unless { context.complete };
"#,
            "p",
        )
        .unwrap();
        let t = tool("t", SideEffect::ReadOnly);
        let alice = caller("alice", json!({}));
        let fine = json!({"a": [1, 2], "b": {"c": "d"}, "n": 1.5, "z": null});
        assert!(decide(&policy, &alice, &t, fine).allowed());
        let long = json!({"a": "x".repeat(MAX_CONTEXT_STRING + 1)});
        let mut deep = json!("bottom");
        for _ in 0..=MAX_CONTEXT_DEPTH {
            deep = json!({ "d": deep });
        }
        let many = json!({"list": (0..MAX_CONTEXT_VALUES).collect::<Vec<_>>()});
        for args in [long, deep, many] {
            let decision = decide(&policy, &alice, &t, args.clone());
            assert_eq!(decision.rules, ["strict"], "{args:.80}");
        }
    }

    #[test]
    fn a_broken_file_names_its_line_and_bounds_hold() {
        let text = "permit (principal, action, resource);\n\nforbid (principal, action resource);\n";
        let err = Policy::parse(text, "team.cedar").unwrap_err().to_string();
        assert!(err.starts_with("the policy file team.cedar, line 3:"), "{err}");
        let dup = "@id(\"a\") permit (principal, action, resource);\n@id(\"a\") permit (principal, action, resource);";
        assert!(
            Policy::parse(dup, "p")
                .unwrap_err()
                .to_string()
                .contains("two rules")
        );
        let template = "permit (principal == ?principal, action, resource);";
        assert!(
            Policy::parse(template, "p")
                .unwrap_err()
                .to_string()
                .contains("template")
        );
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.cedar");
        std::fs::write(&big, " ".repeat(MAX_POLICY_BYTES as usize + 1)).unwrap();
        assert!(matches!(Policy::read(&big), Err(PolicyError::TooLarge { .. })));
        let missing = Policy::read(&dir.path().join("none.cedar"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("none.cedar"), "{missing}");
        let file = dir.path().join("ok.cedar");
        std::fs::write(&file, POLICY).unwrap();
        assert_eq!(Policy::read(&file).unwrap().rules(), 4);
    }
}

//! `[cluster]` of the daemon config: where the shared PostgreSQL
//! database is, this node's name and the job lease.
//!
//! Only the file is read here: the connection string is checked for what can
//! be told without a network (its shape, no password in it); whether the
//! server answers is `forager check --daemon`'s question, asked by the
//! `forager-cluster` crate. The password comes from an environment variable
//! or a file, is held as a [`DatabasePassword`] that `Debug` never prints,
//! and is never part of an error message.

use std::time::Duration;

use super::error::quote;
use super::reader::{Node, Reader, Table};

pub(crate) const CLUSTER_FIELDS: &[&str] =
    &["database", "password_env", "password_file", "node", "lease"];

/// Default job lease: renewed every 10 s, so a node that dies frees its jobs
/// within 30 s, while a database hiccup of a few seconds costs nothing.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// Shortest lease: renewal every lease/3 must leave a round trip's margin.
pub const MIN_LEASE: Duration = Duration::from_secs(1);
/// Longest lease: beyond it a dead node's jobs wait too long for a new owner.
pub const MAX_LEASE: Duration = Duration::from_secs(3600);
/// Longest node name (it is stored in every lease row and shown in `status`).
pub const MAX_NODE_LEN: usize = 64;

/// The database password, read from `password_env` or `password_file`.
/// Its `Debug` prints `"***"`: a config printed in a log or a panic keeps it secret.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabasePassword(String);

impl DatabasePassword {
    pub fn new(password: String) -> Self {
        DatabasePassword(password)
    }

    /// The password itself, for the connection only.
    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for DatabasePassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

/// `[cluster]`: present, the daemon is one node of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    /// A libpq connection string, key=value (`"host=db.example port=5432
    /// dbname=forager user=forager"`) or a URL (`"postgresql://forager@db.example/forager"`),
    /// without a password.
    pub database: String,
    /// From `password_env` or `password_file`; `None`: the server does not ask for one (trust, peer…).
    pub password: Option<DatabasePassword>,
    /// This node's name in lease rows; `None`: the host name (the caller resolves it).
    pub node: Option<String>,
    /// How long a lease holds without renewal.
    pub lease: Duration,
}

pub(crate) fn read_cluster(r: &mut Reader<'_>, table: Node<'_>) -> Option<ClusterConfig> {
    let t = &r.table("cluster", table, CLUSTER_FIELDS)?;
    let database = match t.get("database") {
        Some(n) => read_database(r, &t.child("database"), n),
        None => {
            r.invalid(
                "cluster.database",
                table,
                "missing field database (a connection string such as \"host=db.example dbname=forager user=forager\")",
            );
            None
        }
    };
    let password = read_password(r, t);
    let node = match t.get("node") {
        None => Some(None),
        Some(n) => read_node(r, &t.child("node"), n).map(Some),
    };
    let lease = match t.get("lease") {
        None => Some(DEFAULT_LEASE),
        Some(n) => r.duration_in(&t.child("lease"), n, MIN_LEASE, MAX_LEASE),
    };
    Some(ClusterConfig {
        database: database?,
        password: password?,
        node: node?,
        lease: lease?,
    })
}

/// The shape of a connection string, and no password in it: a password in
/// the config would end up in backups, in `check`'s output and in bug
/// reports; `password_env` or `password_file` keep it out.
fn read_database(r: &mut Reader<'_>, field: &str, n: Node<'_>) -> Option<String> {
    let s = r.string(field, n)?;
    let text = s.trim();
    if text.is_empty() {
        r.invalid(
            field,
            n,
            "must not be empty (e.g. \"host=db.example dbname=forager user=forager\")",
        );
        return None;
    }
    let why = if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        check_url(text)
    } else {
        check_key_values(text)
    };
    match why {
        Ok(()) => Some(text.to_string()),
        Err(why) => {
            r.invalid(field, n, why);
            None
        }
    }
}

const NO_PASSWORD: &str =
    "holds a password; give it with password_env or password_file, never in the config";

fn check_url(text: &str) -> Result<(), String> {
    // `url` reads the authority and the query as libpq does for these two schemes.
    let url = url::Url::parse(text).map_err(|e| format!("invalid URL: {e}"))?;
    if url.password().is_some() || url.query_pairs().any(|(k, _)| k == "password") {
        return Err(format!("the URL {NO_PASSWORD}"));
    }
    Ok(())
}

/// libpq's key=value form: words `key=value`, a value optionally in single
/// quotes with `\'` and `\\` escapes.
fn check_key_values(text: &str) -> Result<(), String> {
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| format!("expected key=value, found {}", quote(rest)))?;
        let key = rest[..eq].trim();
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "invalid key {} (expected key=value words such as \"host=db.example dbname=forager\", or a postgresql:// URL)",
                quote(key)
            ));
        }
        if key == "password" {
            return Err(format!("the connection string {NO_PASSWORD}"));
        }
        rest = rest[eq + 1..].trim_start();
        if let Some(quoted) = rest.strip_prefix('\'') {
            let mut escaped = false;
            let mut end = None;
            for (i, c) in quoted.char_indices() {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '\'') => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.ok_or_else(|| format!("unclosed quote in the value of {key}"))?;
            rest = &quoted[end + 1..];
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            rest = &rest[end..];
        }
        rest = rest.trim_start();
    }
    Ok(())
}

/// At most one of `password_env`, `password_file`; `Some(None)` when neither.
fn read_password(r: &mut Reader<'_>, t: &Table<'_>) -> Option<Option<DatabasePassword>> {
    let sources: Vec<(&str, Node<'_>)> = ["password_env", "password_file"]
        .into_iter()
        .filter_map(|k| t.get(k).map(|n| (k, n)))
        .collect();
    let (source, node) = match sources.as_slice() {
        [] => return Some(None),
        [one] => *one,
        [_, (k, n), ..] => {
            r.invalid(
                &t.child(k),
                *n,
                "give only one of password_env, password_file",
            );
            return None;
        }
    };
    let field = t.child(source);
    let text = r.string(&field, node)?;
    let password = if source == "password_env" {
        match std::env::var(text) {
            Ok(p) => p,
            Err(_) => {
                r.invalid(
                    &field,
                    node,
                    format!("environment variable {text} is not set (or not UTF-8)"),
                );
                return None;
            }
        }
    } else {
        match super::http::read_secret_file(&r.path_in_file(text)) {
            Ok(p) => p,
            Err(why) => {
                r.invalid(&field, node, why);
                return None;
            }
        }
    };
    if password.is_empty() {
        // An empty password is a mistake (an empty file, a variable set to
        // nothing); a server that needs none is configured by leaving both out.
        r.invalid(
            &field,
            node,
            format!("{} gives an empty password", quote(text)),
        );
        return None;
    }
    Some(Some(DatabasePassword(password)))
}

/// A node name: what `status` shows and lease rows hold, so printable and short.
fn read_node(r: &mut Reader<'_>, field: &str, n: Node<'_>) -> Option<String> {
    let s = r.string(field, n)?;
    if !is_valid_node_name(s) {
        r.invalid(
            field,
            n,
            format!(
                "invalid node name {}: 1 to {MAX_NODE_LEN} letters, digits, '-', '_' or '.'",
                quote(s)
            ),
        );
        return None;
    }
    Some(s.to_string())
}

/// Whether `name` would be accepted as `node` (the host name, when it is the default, is checked too).
pub fn is_valid_node_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NODE_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse_daemon, DaemonConfig};
    use std::path::Path;

    fn parse(text: &str) -> Result<DaemonConfig, String> {
        parse_daemon(text, Path::new("forager.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn no_cluster_section_means_a_machine_alone() {
        assert_eq!(parse("max_jobs = 2\n").unwrap().cluster, None);
    }

    #[test]
    fn a_cluster_section_is_read_with_its_defaults() {
        let c = parse(
            "[cluster]\ndatabase = \"host=127.0.0.1 port=5433 dbname=forager user=forager\"\n",
        )
        .unwrap()
        .cluster
        .unwrap();
        assert_eq!(
            c.database,
            "host=127.0.0.1 port=5433 dbname=forager user=forager"
        );
        assert_eq!(c.password, None);
        assert_eq!(c.node, None);
        assert_eq!(c.lease, DEFAULT_LEASE);
        let c = parse(
            "[cluster]\ndatabase = \"postgresql://forager@db.example:5432/forager?sslmode=require\"\n\
             node = \"node-1.example\"\nlease = \"10s\"\n",
        )
        .unwrap()
        .cluster
        .unwrap();
        assert_eq!(c.node.as_deref(), Some("node-1.example"));
        assert_eq!(c.lease, Duration::from_secs(10));
    }

    #[test]
    fn the_password_comes_from_a_file_and_is_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db.pw");
        std::fs::write(&file, "s3cret-pw\n").unwrap();
        let text = format!(
            "[cluster]\ndatabase = \"host=db dbname=f user=f\"\npassword_file = \"{}\"\n",
            file.display()
        );
        let config = parse(&text).unwrap();
        let c = config.cluster.as_ref().unwrap();
        assert_eq!(
            c.password.as_ref().map(DatabasePassword::reveal),
            Some("s3cret-pw")
        );
        let shown = format!("{config:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("***"), "{shown}");
    }

    #[test]
    fn a_password_in_the_connection_string_is_refused() {
        assert_eq!(
            parse("[cluster]\ndatabase = \"host=db password=hunter2 user=f\"\n").unwrap_err(),
            "forager.toml:2: cluster.database: the connection string holds a password; \
             give it with password_env or password_file, never in the config"
        );
        assert_eq!(
            parse("[cluster]\ndatabase = \"host=db password='a b' user=f\"\n").unwrap_err(),
            "forager.toml:2: cluster.database: the connection string holds a password; \
             give it with password_env or password_file, never in the config"
        );
        let e = parse("[cluster]\ndatabase = \"postgresql://f:hunter2@db/f\"\n").unwrap_err();
        assert_eq!(
            e,
            "forager.toml:2: cluster.database: the URL holds a password; \
             give it with password_env or password_file, never in the config"
        );
        assert!(!e.contains("hunter2"));
        let e =
            parse("[cluster]\ndatabase = \"postgresql://db/f?password=hunter2\"\n").unwrap_err();
        assert!(
            e.contains("holds a password") && !e.contains("hunter2"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_field_and_the_reason() {
        assert_eq!(
            parse("[cluster]\nnode = \"a\"\n").unwrap_err(),
            "forager.toml:1: cluster.database: missing field database \
             (a connection string such as \"host=db.example dbname=forager user=forager\")"
        );
        assert_eq!(
            parse("[cluster]\ndatabase = \"host=db\"\nlease = \"500ms\"\n").unwrap_err(),
            "forager.toml:3: cluster.lease: 500ms is shorter than the minimum of 1s"
        );
        assert_eq!(
            parse("[cluster]\ndatabase = \"host=db\"\nnode = \"a b\"\n").unwrap_err(),
            "forager.toml:3: cluster.node: invalid node name \"a b\": \
             1 to 64 letters, digits, '-', '_' or '.'"
        );
        assert_eq!(
            parse("[cluster]\ndatabase = \"host=db 'x\"\n").unwrap_err(),
            "forager.toml:2: cluster.database: expected key=value, found \"'x\""
        );
        assert_eq!(
            parse("[cluster]\ndatabase = \"host='db\"\n").unwrap_err(),
            "forager.toml:2: cluster.database: unclosed quote in the value of host"
        );
        assert_eq!(
            parse("[cluster]\ndatabase = \"  \"\n").unwrap_err(),
            "forager.toml:2: cluster.database: must not be empty \
             (e.g. \"host=db.example dbname=forager user=forager\")"
        );
        assert_eq!(
            parse("[cluster]\ndatabase = \"host=db\"\npasword_env = \"X\"\n").unwrap_err(),
            "forager.toml:3: cluster.pasword_env: unknown field \
             (expected one of: database, password_env, password_file, node, lease)"
        );
        assert_eq!(
            parse(
                "[cluster]\ndatabase = \"host=db\"\npassword_env = \"FORAGER_TEST_UNSET_VARIABLE_38\"\n"
            )
            .unwrap_err(),
            "forager.toml:3: cluster.password_env: environment variable \
             FORAGER_TEST_UNSET_VARIABLE_38 is not set (or not UTF-8)"
        );
        assert_eq!(
            parse(
                "[cluster]\ndatabase = \"host=db\"\npassword_env = \"A\"\npassword_file = \"/x\"\n"
            )
            .unwrap_err(),
            "forager.toml:4: cluster.password_file: give only one of password_env, password_file"
        );
        assert!(parse("cluster = 3\n")
            .unwrap_err()
            .starts_with("forager.toml:1: cluster: expected a table"));
    }
}

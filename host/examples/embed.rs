//! Embedding toolhost: build a host serving the native tools over a
//! temporary directory, list its tools, call `grep` and `read`, and print
//! what they return, the way an agent loop would.
//!
//! Run with `cargo run --example embed -p toolhost`.

use serde_json::json;
use toolhost::{Block, CallControl, Toolhost};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The directory the native tools are confined to: the agent's project.
    let project = tempfile::tempdir()?;
    std::fs::write(
        project.path().join("TODO.md"),
        "# TODO\n- write the release notes\n- ship on Friday\n",
    )?;

    // 1. Build the host. Every source is opt-in: here the native tools,
    //    read-only, over `project`. No plugins, no upstream servers.
    let (host, report) = Toolhost::builder().root(project.path()).build().await?;
    for line in report.lines() {
        eprintln!("left out: {line}");
    }

    // 2. List the tools, as the model is to see them.
    println!("tools:");
    for tool in &host.list_tools().tools {
        println!("  {:<10} {}", tool.name, tool.schema.description());
    }

    // 3. Call `grep`, then `read` the file it found.
    let grep = host
        .call_tool("grep", json!({"pattern": "ship"}), &CallControl::new("call-1"))
        .await?;
    println!("\ngrep ship:\n{}", grep.text());
    let read = host
        .call_tool("read", json!({"path": "TODO.md"}), &CallControl::new("call-2"))
        .await?;

    // 4. Read the output: content blocks for the model, structured content
    //    for programs. A tool that ran and failed says so in `is_error`.
    println!("\nread TODO.md (is_error: {}):", read.is_error);
    for block in &read.content {
        if let Block::Text(text) = block {
            println!("{}", text.text);
        }
    }
    if let Some(structured) = &read.structured_content {
        println!("structured: lines {}", structured["lines"]);
    }

    // A call that gets no result is an error naming the tool.
    let missing = host
        .call_tool("no_such_tool", json!({}), &CallControl::new("call-3"))
        .await;
    if let Err(e) = missing {
        println!("\n`{}` failed: {e}", e.tool);
    }

    host.shutdown().await;
    Ok(())
}

//! `TerminalApprover` with an injected terminal: answers, the no-terminal refusal, and one prompt
//! at a time.

use std::io::{self, BufReader, Cursor, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode::Pipeline;
use codemode::pipeline::CallRequest;
use codemode::policy::{NO_TERMINAL, Policy, Terminal, TerminalApprover};
use serde_json::json;

use crate::support::{echo_tool, registry};

/// Output shared with the test.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn typed(answer: &'static str, screen: Screen) -> TerminalApprover {
    TerminalApprover::with_terminal(move || {
        Ok(Terminal {
            input: Box::new(Cursor::new(answer.as_bytes())),
            output: Box::new(screen.clone()),
            ansi: false,
        })
    })
}

fn asking_pipeline(approver: TerminalApprover) -> Pipeline {
    let policy = Policy::from_toml_str(
        "[[rule]]\ntools = [\"echo\"]\ndecision = \"ask\"\nreason = \"echoes\"\n",
        "p.toml",
    )
    .unwrap();
    Pipeline::builder(registry([echo_tool("echo")]))
        .pre_hook(policy.pre_hook())
        .shared_approver(Arc::new(approver))
        .build()
}

async fn call(pipeline: &Pipeline) -> Result<serde_json::Value, (String, String)> {
    let out = pipeline
        .call(CallRequest::new("echo", json!({"text": "hi"})))
        .await;
    match out.error {
        None => Ok(out.result().unwrap().clone()),
        Some(e) => Err((
            e.details()["by"].as_str().unwrap().to_string(),
            e.details()["reason"].as_str().unwrap().to_string(),
        )),
    }
}

#[tokio::test]
async fn yes_approves_and_anything_else_refuses() {
    for answer in ["y\n", "Y\n", " yes \n"] {
        let screen = Screen::default();
        let p = asking_pipeline(typed(answer, screen.clone()));
        assert_eq!(call(&p).await, Ok(json!({"echo": "hi"})), "{answer:?}");
        let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
        assert!(
            shown.contains("`echo`: echoes\n  args: {\"text\":\"hi\"}\n  allow this call? [y/N] "),
            "{shown}"
        );
    }
    for (answer, reason) in [
        ("n\n", "refused at the terminal prompt"),
        ("sure\n", "refused at the terminal prompt"),
        ("", "no answer at the terminal prompt (end of input)"),
    ] {
        let p = asking_pipeline(typed(answer, Screen::default()));
        assert_eq!(
            call(&p).await,
            Err(("approver".into(), reason.into())),
            "{answer:?}"
        );
    }
}

#[tokio::test]
async fn no_terminal_refuses_and_says_how_to_allow() {
    let approver =
        TerminalApprover::with_terminal(|| Err(io::Error::new(io::ErrorKind::NotFound, "no tty")));
    let p = asking_pipeline(approver);
    let (by, reason) = call(&p).await.unwrap_err();
    assert_eq!(by, "approver");
    assert!(reason.starts_with(NO_TERMINAL), "{reason}");
    assert!(
        reason.contains("`echo` needs approval") && reason.contains("add an allow rule"),
        "{reason}"
    );
}

/// Answers `y` after a pause, counting how many prompts are open at once.
struct Slow(Arc<AtomicUsize>, bool);

impl Read for Slow {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.1 {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(50));
        self.1 = true;
        buf[..2].copy_from_slice(b"y\n");
        Ok(2)
    }
}

impl Drop for Slow {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_asks_are_prompted_one_at_a_time() {
    let open = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (o, m) = (open.clone(), most.clone());
    let approver = TerminalApprover::with_terminal(move || {
        let now = o.fetch_add(1, Ordering::SeqCst) + 1;
        m.fetch_max(now, Ordering::SeqCst);
        Ok(Terminal {
            input: Box::new(BufReader::new(Slow(o.clone(), false))),
            output: Box::new(io::sink()),
            ansi: false,
        })
    });
    let p = asking_pipeline(approver);
    let calls = (0..4).map(|_| {
        let p = p.clone();
        tokio::spawn(async move { call(&p).await })
    });
    for done in futures::future::join_all(calls).await {
        assert_eq!(done.unwrap(), Ok(json!({"echo": "hi"})));
    }
    assert_eq!(most.load(Ordering::SeqCst), 1, "prompts overlapped");
}

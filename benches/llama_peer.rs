//! llama-server for a benchmark: started with an 8192-token window, deterministic
//! sampling and a template that renders tools, and a summariser that asks it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn start() -> Option<(
    Server,
    scratchpad::provider::ProviderSummariser,
    tokio::runtime::Runtime,
)> {
    let binary = std::env::var("SCRATCHPAD_LLAMA_SERVER").ok()?;
    let model = std::env::var("SCRATCHPAD_LLAMA_MODEL").ok()?;
    let template = std::env::var("SCRATCHPAD_LLAMA_TEMPLATE").ok()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new(binary)
        .args([
            "-m",
            &model,
            "-c",
            "8192",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args(["-t", "2", "-np", "1", "--temp", "0", "--seed", "1"])
        .args(["--jinja", "--chat-template-file", &template])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let server = Server(child);
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() || !healthy(port) {
        if started.elapsed() > Duration::from_secs(120) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let provider = scratchpad::provider::openai::OpenAiProvider::new(scratchpad::provider::openai::OpenAiConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key: None,
        model: String::new(),
        retry: scratchpad::provider::RetryPolicy::default(),
    })
    .ok()?;
    let runtime = tokio::runtime::Runtime::new().ok()?;
    let summariser =
        scratchpad::provider::ProviderSummariser::new(std::sync::Arc::new(provider), runtime.handle().clone(), 512);
    Some((server, summariser, runtime))
}

fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.write_all(b"GET /health HTTP/1.0\r\n\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")
}

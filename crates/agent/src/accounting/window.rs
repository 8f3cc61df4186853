//! What a model's window is, from what the server says about itself (llama.cpp's
//! `/props`, an OpenAI-style `/models`) or from the table of known models.

use serde_json::Value;

use crate::protocol::{Window, WindowSource};

/// Context windows of model families, by model id prefix (longest prefix first).
const KNOWN_WINDOWS: &[(&str, u64)] = &[("claude-", 200_000)];

/// The window of a known model.
pub fn known_window(model: &str) -> Option<Window> {
    KNOWN_WINDOWS
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|&(prefix, tokens)| Window {
            tokens,
            source: WindowSource::ModelTable {
                family: format!("{prefix}*"),
            },
        })
}

/// llama.cpp's `GET /props`: the slot context of the running server (`n_ctx`, at the
/// top level in newer builds, under `default_generation_settings` in older ones).
pub fn window_from_props(props: &Value) -> Option<u64> {
    props
        .get("default_generation_settings")
        .and_then(|settings| settings.get("n_ctx"))
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
}

/// An OpenAI-compatible `GET /v1/models`: vLLM's `max_model_len` for the model in use
/// (or the only model served).
pub fn window_from_models(models: &Value, model: &str) -> Option<u64> {
    let data = models.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|entry| entry.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    entry.get("max_model_len").and_then(Value::as_u64).filter(|&n| n > 0)
}

/// llama.cpp's `GET /props`: the model it serves (`model_alias`, which is the file's
/// path unless the server was given `--alias`).
pub fn model_from_props(props: &Value) -> Option<String> {
    ["model_alias", "model_path"]
        .iter()
        .find_map(|key| props.get(key).and_then(Value::as_str))
        .filter(|name| !name.is_empty())
        .map(str::to_string)
}

/// llama.cpp's `GET /props`: whether the chat template renders tool definitions.
pub fn tools_from_props(props: &Value) -> Option<bool> {
    props.get("chat_template_caps")?.get("supports_tools")?.as_bool()
}

/// An OpenAI-compatible `GET /v1/models`: the model, when exactly one is served.
pub fn model_from_models(models: &Value) -> Option<String> {
    match models.get("data")?.as_array()?.as_slice() {
        [only] => only.get("id").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

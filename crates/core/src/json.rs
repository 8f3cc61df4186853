//! JSON in and out at any depth. serde_json stops at 128 levels, and its recursion
//! would overflow a thread's stack long before the depth a tool input can reach; every
//! history, journal line, transcript and model response goes through here instead,
//! where the stack grows on demand (`serde_stacker`), so a 10,000-level input is
//! neither refused nor a crash.

use std::io::Write;

/// The stack of every thread that holds histories (the runtime's workers and blocking
/// threads): a clone or drop of a value nested 10,000 levels takes about 3 MB in a
/// debug build, and the stack is reserved, not used, until it is needed.
pub const WORKER_STACK_BYTES: usize = 64 << 20;

use serde::{Deserialize, Serialize};

/// `T` from JSON text, at any depth; trailing characters are an error.
pub fn from_str<'a, T: Deserialize<'a>>(text: &'a str) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut deserializer))?;
    deserializer.end()?;
    Ok(value)
}

/// Deepest nesting that [`from_str_of_depth`] reads with serde_json's own recursion,
/// well within its limit of 128 and the stack of any thread.
pub(crate) const SHALLOW_DEPTH: usize = 64;

/// [`from_str`] of a text whose nesting is known to be `depth` deep. A shallow one is
/// read without growing the stack, sparing the check for room at every level when a
/// long history's receipt reads the inputs of thousands of calls.
pub fn from_str_of_depth<'a, T: Deserialize<'a>>(text: &'a str, depth: usize) -> serde_json::Result<T> {
    if depth > SHALLOW_DEPTH {
        return from_str(text);
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// `T` from JSON bytes, at any depth; trailing characters are an error.
pub fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    deserializer.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut deserializer))?;
    deserializer.end()?;
    Ok(value)
}

/// `value` as compact JSON into `writer`, at any depth.
pub fn to_writer<W: Write, T: Serialize + ?Sized>(writer: W, value: &T) -> serde_json::Result<()> {
    to_writer_with(writer, serde_json::ser::CompactFormatter, value)
}

/// `value` into `writer` laid out by `formatter`, at any depth.
pub fn to_writer_with<W: Write, F: serde_json::ser::Formatter, T: Serialize + ?Sized>(
    writer: W,
    formatter: F,
    value: &T,
) -> serde_json::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(writer, formatter);
    value.serialize(serde_stacker::Serializer::new(&mut serializer))
}

/// `value` as compact JSON bytes, at any depth.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(128);
    to_writer(&mut bytes, value)?;
    Ok(bytes)
}

/// `value` as compact JSON text, at any depth.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    // serde_json writes only valid UTF-8.
    to_vec(value).map(|bytes| String::from_utf8(bytes).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn nested(depth: usize) -> String {
        format!("{}{}{}", "[".repeat(depth), "1.50", "]".repeat(depth))
    }

    /// Reading and writing grow the stack as they go; a clone or drop of the value
    /// recurses, which [`WORKER_STACK_BYTES`] leaves room for.
    #[test]
    fn ten_thousand_levels_read_write_clone_and_drop() {
        std::thread::Builder::new()
            .stack_size(WORKER_STACK_BYTES)
            .spawn(|| {
                let text = nested(10_000);
                let value: Value = from_str(&text).unwrap();
                assert_eq!(to_string(&value).unwrap(), text, "byte for byte");
                let copy = value.clone();
                assert_eq!(to_vec(&copy).unwrap().len(), text.len());
                drop(copy);
                drop(value);
                assert!(from_str::<Value>(&format!("{text} x")).is_err(), "trailing text");
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

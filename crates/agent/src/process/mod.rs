//! The processes scratchpad starts beside itself: the children it keeps or sweeps,
//! and the environment they get. Commands (`tools`) and MCP servers (`mcp`) both use
//! it, so neither reaches into the other.

pub mod children;
pub mod environment;

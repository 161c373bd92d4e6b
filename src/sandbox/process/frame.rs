//! The wire between the host and a worker process: length-prefixed frames (4-byte little-endian
//! length, then the body), JSON but for the raw frames that follow a few messages (the startup
//! snapshot, an encoded tool result). The host reads what a worker writes as untrusted:
//! a frame over [`MAX_FRAME_BYTES`] or one that does not parse ends the worker.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::harden::WorkerReport;
use crate::call::{CallError, ContextEntry, Limits};
use crate::sandbox::host::{EncodedValue, Encoding};
use crate::sandbox::{RunOutcome, ToolReply};

/// The largest frame either side accepts. Values crossing are already capped far below it
/// (program source, per-call argument and result bytes, the return value).
pub(crate) const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

/// Host to worker.
// Externally tagged: serde buffers internally tagged enums, and the outcome's raw return value
// cannot be read back from a buffer.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum ToWorker {
    /// First frame: how to set the worker up. The worker answers [`FromWorker::Ready`].
    Hello(WorkerSetup),
    /// Run one program (a worker runs one at a time). `run` numbers the runs of one worker, so
    /// a late frame about an earlier run is never taken for the current one.
    Run {
        run: u64,
        source: String,
        limits: Limits,
        paths: Vec<String>,
        run_id: String,
        /// The run tracks waves ([`TrackWaves`](crate::call::TrackWaves)); the run's other
        /// extensions stay with the host.
        track_waves: bool,
    },
    /// The answer to [`FromWorker::Call`] `id`.
    Reply {
        id: u64,
        result: Result<ToolReply, CallError>,
    },
    /// A successful answer to [`FromWorker::Call`] `id` whose value, an array or an object,
    /// follows as one raw frame in `format`; `size` is the size of its JSON text. See [`reply`].
    ReplyEncoded {
        id: u64,
        contexts: Vec<ContextEntry>,
        format: Encoding,
        size: u64,
    },
    /// Stop (or restart) the run's deadline clock for call `id` (an approver is waiting).
    Pause { id: u64 },
    /// Undo one [`ToWorker::Pause`].
    Resume { id: u64 },
    /// Stop run `run` (status `cancelled`).
    Cancel { run: u64 },
}

/// How a worker process sets itself up before it runs any program.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkerSetup {
    pub heap_bytes: usize,
    pub worker_stack_bytes: usize,
    pub isolates_per_thread: usize,
    /// `RLIMIT_AS` of the worker: past it, allocations fail and the worker dies (`crashed`).
    pub address_space_bytes: Option<u64>,
    /// Try what the confinement must refuse and report it in [`FromWorker::Ready`].
    #[serde(default)]
    pub probe: bool,
    /// The fingerprint of the host's startup snapshot, which follows this frame as one raw
    /// frame; `None`: no snapshot follows. The worker uses it only when its own fingerprint is
    /// the same (the same build), and makes its own otherwise.
    #[serde(default)]
    pub snapshot: Option<String>,
    /// The host's isolates are made without `WebAssembly`
    /// ([`NO_WEBASSEMBLY_ENV`](crate::sandbox::engine::NO_WEBASSEMBLY_ENV)): the worker's must
    /// be too, or the host's snapshot would not fit them.
    #[serde(default)]
    pub webassembly_left_out: bool,
}

/// Worker to host.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum FromWorker {
    /// The worker is set up and takes programs; how it is confined.
    Ready(WorkerReport),
    /// The worker's next isolate is built: a run starts at once (sent after `Ready` and after
    /// every outcome).
    Warm,
    /// The program called a tool; the host answers with [`ToWorker::Reply`] or
    /// [`ToWorker::ReplyEncoded`] `id`.
    Call {
        id: u64,
        path: String,
        args: Value,
        unconvertible: Option<String>,
        seq: u64,
        wave: Option<u64>,
    },
    /// Run `run` ended: the host cancels its calls still in flight (the run's token).
    CallsCancelled { run: u64 },
    /// The run's outcome. `retire`: the worker gave up a stuck engine thread and must be
    /// replaced.
    Outcome {
        outcome: Box<RunOutcome>,
        retire: bool,
    },
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("the pipe closed")]
    Closed,
    #[error("reading the pipe failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("a frame of {0} bytes is over the {MAX_FRAME_BYTES}-byte limit")]
    TooLarge(usize),
    #[error("a frame did not parse: {0}")]
    Malformed(#[from] serde_json::Error),
}

pub(crate) fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    let mut frame = vec![0u8; 4];
    serde_json::to_writer(&mut frame, message).expect("frames always serialise");
    let len = (frame.len() - 4) as u32;
    frame[..4].copy_from_slice(&len.to_le_bytes());
    frame
}

/// The frames answering call `id`. A structured value crosses as a raw frame
/// ([`ToWorker::ReplyEncoded`]): in the engine's binary object format when the worker's engine
/// is this build's (`same_engine`) and the format carries the value (the host encodes it once,
/// where the worker would otherwise parse JSON into a `Value` and encode that, on the run's
/// path), else as its JSON text, which the worker hands to its engine unread (serde reads no
/// JSON nested over 128 levels, and the worker ended on such an answer).
pub(crate) fn reply(id: u64, result: Result<ToolReply, CallError>, same_engine: bool) -> Vec<u8> {
    let reply = match result {
        Ok(reply) if matches!(reply.value, Value::Array(_) | Value::Object(_)) => reply,
        other => return encode(&ToWorker::Reply { id, result: other }),
    };
    // Small floats take more room in the binary format than as text: it must fit a frame.
    let binary_up_to = if same_engine { MAX_FRAME_BYTES } else { 0 };
    let encoded = EncodedValue::of(reply.value, reply.json, binary_up_to);
    let mut frames = encode(&ToWorker::ReplyEncoded {
        id,
        contexts: reply.contexts,
        format: encoded.format,
        size: encoded.size,
    });
    push_raw(&mut frames, &encoded.bytes);
    frames
}

fn check_len(header: [u8; 4]) -> Result<usize, FrameError> {
    let len = u32::from_le_bytes(header) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(len));
    }
    Ok(len)
}

/// A frame of raw bytes (the startup snapshot).
pub(crate) fn raw(bytes: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(bytes.len() + 4);
    push_raw(&mut frame, bytes);
    frame
}

/// Append a frame of raw bytes to `frames`.
fn push_raw(frames: &mut Vec<u8>, bytes: &[u8]) {
    frames.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    frames.extend_from_slice(bytes);
}

/// Read one raw frame (blocking).
pub(crate) fn read_raw_blocking(reader: &mut impl std::io::Read) -> Result<Vec<u8>, FrameError> {
    let mut header = [0u8; 4];
    reader.read_exact(&mut header)?;
    let mut body = vec![0u8; check_len(header)?];
    reader.read_exact(&mut body)?;
    Ok(body)
}

/// Read one frame (blocking).
pub(crate) fn read_blocking<T: for<'de> Deserialize<'de>>(
    reader: &mut impl std::io::Read,
) -> Result<T, FrameError> {
    let mut header = [0u8; 4];
    match reader.read_exact(&mut header) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let mut body = vec![0u8; check_len(header)?];
    reader.read_exact(&mut body)?;
    Ok(serde_json::from_slice(&body)?)
}

/// Read one frame.
pub(crate) async fn read<T: for<'de> Deserialize<'de>>(
    reader: &mut (impl AsyncRead + Unpin),
) -> Result<T, FrameError> {
    let mut header = [0u8; 4];
    match reader.read_exact(&mut header).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let mut body = vec![0u8; check_len(header)?];
    reader.read_exact(&mut body).await?;
    Ok(serde_json::from_slice(&body)?)
}

/// Write one frame and flush it.
pub(crate) async fn write(
    writer: &mut (impl AsyncWrite + Unpin),
    frame: &[u8],
) -> std::io::Result<()> {
    writer.write_all(frame).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ErrorKind;
    use serde_json::json;

    /// The frames `reply` wrote, read back as the worker reads them.
    fn read_back(frames: &[u8]) -> (ToWorker, Option<Vec<u8>>) {
        let mut input = frames;
        let message = read_blocking::<ToWorker>(&mut input).unwrap();
        let raw = matches!(message, ToWorker::ReplyEncoded { .. })
            .then(|| read_raw_blocking(&mut input).unwrap());
        assert!(input.is_empty(), "nothing follows the answer");
        (message, raw)
    }

    #[cfg(not(feature = "v8"))]
    #[test]
    fn a_structured_value_crosses_in_the_engines_format_with_its_size_and_contexts() {
        let value = json!([{ "id": 1, "name": "één", "score": 2.5 }, { "id": -7, "big": 1e300 }]);
        let mut reply = ToolReply::new(value.clone());
        reply.contexts = vec![ContextEntry::new("note", "kept")];
        let (message, raw) = read_back(&super::reply(7, Ok(reply), true));
        let ToWorker::ReplyEncoded {
            id: 7,
            contexts,
            format: Encoding::Binary,
            size,
        } = message
        else {
            panic!("not in the engine's format: {message:?}");
        };
        assert_eq!(contexts, vec![ContextEntry::new("note", "kept")]);
        assert_eq!(size, value.to_string().len() as u64);
        let bytes = crate::sandbox::handover::engine_bytes(&value).unwrap();
        assert_eq!(raw.unwrap(), bytes);
        // The host's JSON text, when it has it, gives the size.
        let mut reply = ToolReply::new(json!({ "a": 1 }));
        reply.json = Some("{\"a\":1}".into());
        let (message, _) = read_back(&super::reply(8, Ok(reply), true));
        assert!(matches!(message, ToWorker::ReplyEncoded { size: 7, .. }));
    }

    #[test]
    fn what_the_format_declines_crosses_as_text_the_worker_does_not_parse() {
        // Deeper than the format nests, and than serde reads (128).
        let mut deep = json!(1);
        for _ in 0..600 {
            deep = json!([deep]);
        }
        let (message, raw) = read_back(&reply(3, Ok(ToolReply::new(deep.clone())), true));
        let text = deep.to_string();
        assert!(matches!(
            message,
            ToWorker::ReplyEncoded { id: 3, format: Encoding::Json, size, .. } if size == text.len() as u64
        ));
        assert_eq!(raw.unwrap(), text.into_bytes());
    }

    #[test]
    fn a_worker_of_another_engine_gets_structured_values_as_text() {
        let value = json!({ "rows": [1, 2.5, "three"] });
        let (message, raw) = read_back(&reply(4, Ok(ToolReply::new(value.clone())), false));
        assert!(matches!(
            message,
            ToWorker::ReplyEncoded {
                id: 4,
                format: Encoding::Json,
                ..
            }
        ));
        assert_eq!(raw.unwrap(), value.to_string().into_bytes());
    }

    #[test]
    fn scalars_and_failures_cross_as_json() {
        for value in [json!("text"), json!(3), json!(null)] {
            let (message, raw) = read_back(&reply(1, Ok(ToolReply::new(value.clone())), true));
            let ToWorker::Reply {
                id: 1,
                result: Ok(reply),
            } = message
            else {
                panic!("not a JSON answer: {message:?}");
            };
            assert_eq!((reply.value, raw), (value, None));
        }
        let failed = CallError::new(ErrorKind::Cancelled, "gone");
        let (message, _) = read_back(&reply(2, Err(failed), true));
        assert!(matches!(
            message,
            ToWorker::Reply {
                id: 2,
                result: Err(_)
            }
        ));
    }
}

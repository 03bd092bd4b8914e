//! The command line of tegragpu-bench: its options (`USAGE`), parsed with lexopt, and the device
//! it picks when none is named.

pub struct Opts {
    pub device: Option<String>,
    pub json: bool,
    pub quick: bool,
    pub cuda: bool,
    pub record_only: Option<u64>,
    pub capi: bool,
    pub owned: bool,
    pub replay: bool,
    pub peer_only: bool,
    pub cuda_facade: Option<String>,
}

const USAGE: &str = "\
usage: tegragpu-bench [--device emu|nvgpu|rm|rm:N] [--json] [--quick] [--no-cuda] [--peer-only] [--cuda-facade PATH] [--record-only N [--replay] [--capi [--owned]]]

Launch latency, CPU cost per launch, copy bandwidth and more, side by side with libcuda
when it is present (docs/performance.md).
  --device D       the device (default: TEGRAGPU_DEVICE, else this machine's GPU, else the
                   emulated Orin, with a notice on stderr)
  --json           print one JSON object instead of the table:
                     {\"device\": {\"spec\", \"name\", \"sm\", \"sm_count\", \"emulated\", \"backend\",
                                 \"driver\"},
                      \"config\": {\"quick\", \"libcuda\", \"version\"},
                      \"rows\": [{\"name\", \"unit\", \"ours\", \"libcuda\", \"ratio\", \"target\",
                                \"pass\"}, ...]}
                   (\"libcuda\": whether libcuda was measured; per row its figure or null)
  --quick          fewer iterations
  --no-cuda        skip the libcuda columns
  --peer-only      two desktop GPUs (the device and rm:1, or rm:0): every way this library
                   copies between them (each copy engine the driver lets a queue use, split
                   launches, several queues, the SM copy kernel at several grids, both
                   directions) beside cuMemcpyPeerAsync, one line each, then the peer rows
  --cuda-facade P  libtegragpu's libcuda.so.1 at P against NVIDIA's libcuda, both in this
                   process: cuLaunchKernel + cuStreamSynchronize, CPU per cuLaunchKernel,
                   cuGraphLaunch of 100 dependent kernel nodes (CPU, and with a sync); NVIDIA's
                   is found as libcuda.so.1 on the library path, so P must not be there
  --record-only N  only record + submit N launches (for instruction counts)
  --replay         with --record-only: N replays of a 10-launch command buffer, each submitted
  --capi           with --record-only: through the C API (tg_launch + tg_queue_submit;
                   with --replay tg_queue_replay_submit)
  --owned          with --capi: on a queue (and, with --replay, a command buffer) owned by the
                   thread (tg_queue_create_owned, tg_cmdbuf_create_owned)
  --help, -h       this text
  --version, -V    the library version";

/// `arg` as it was written, for messages.
fn arg_text(arg: &lexopt::Arg<'_>) -> String {
    match arg {
        lexopt::Arg::Short(c) => format!("-{c}"),
        lexopt::Arg::Long(l) => format!("--{l}"),
        lexopt::Arg::Value(v) => v.to_string_lossy().into_owned(),
    }
}

/// Parses the command line; `--help` and `--version` print and exit 0. `Err`: a usage error
/// (`main` exits 2).
pub fn parse_args() -> Result<Opts, String> {
    use lexopt::prelude::*;
    let mut o = Opts {
        device: None,
        json: false,
        quick: false,
        cuda: true,
        record_only: None,
        capi: false,
        owned: false,
        replay: false,
        peer_only: false,
        cuda_facade: None,
    };
    let mut parser = lexopt::Parser::from_env();
    loop {
        let arg = match parser.next() {
            Ok(Some(arg)) => arg,
            Ok(None) => break,
            // `--json=1`: a value given to an option that takes none.
            Err(lexopt::Error::UnexpectedValue { option, value }) => {
                return Err(format!(
                    "unknown argument {option}={}",
                    value.to_string_lossy()
                ))
            }
            Err(e) => return Err(e.to_string()),
        };
        match arg {
            Long("device") => {
                let v = parser.value().map_err(|_| "--device needs a value")?;
                o.device = Some(v.string().map_err(|e| format!("--device: {e}"))?);
            }
            Long("json") => o.json = true,
            Long("quick") => o.quick = true,
            Long("no-cuda") => o.cuda = false,
            Long("capi") => o.capi = true,
            Long("owned") => o.owned = true,
            Long("replay") => o.replay = true,
            Long("peer-only") => o.peer_only = true,
            Long("cuda-facade") => {
                let v = parser
                    .value()
                    .map_err(|_| "--cuda-facade needs the path of a libcuda.so.1")?;
                o.cuda_facade = Some(v.string().map_err(|e| format!("--cuda-facade: {e}"))?);
            }
            Long("record-only") => {
                let n = parser.value().map_err(|_| "--record-only needs N")?;
                let n = n.string().map_err(|e| format!("--record-only: {e}"))?;
                o.record_only = Some(n.parse().map_err(|e| format!("--record-only: {e}"))?);
            }
            Short('h') | Long("help") => {
                println!("{USAGE}");
                std::process::exit(0)
            }
            Short('V') | Long("version") => {
                println!("tegragpu-bench {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0)
            }
            other => return Err(format!("unknown argument {}", arg_text(&other))),
        }
    }
    Ok(o)
}

/// With no `--device` and no `TEGRAGPU_DEVICE`, on a machine without an NVIDIA GPU: `"emu"`,
/// after a notice on stderr, as `tegragpu-info` does. Otherwise `device` as it is (the library
/// picks the device; a bad spec fails there, with its message).
pub fn device_or_emulator(device: Option<String>) -> Option<String> {
    use tegragpu::backend::{choose_device_or_emulator, ChoiceSource};
    if device.is_some() {
        return device;
    }
    let env = tegragpu::core::device_from_env().ok().flatten();
    match choose_device_or_emulator(None, env.as_deref()) {
        Ok(c) if c.source == ChoiceSource::Fallback => {
            eprintln!(
                "tegragpu-bench: {}: benchmarking the emulated Orin (\"emu\"), whose figures are \
                 not a GPU's; --device picks the device",
                c.reason
            );
            Some("emu".to_string())
        }
        _ => None,
    }
}

//! The fixed list of read-only commands gpulint may run on a host ([`HostCommand`]) and what
//! running one gave ([`CommandOutput`]): shared by the readers that run or look them up and the
//! parsers that read their output.

/// The read-only commands gpulint may run on a host. Every one is optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostCommand {
    /// `nvidia-smi --query-gpu=<QUERY_GPU_FIELDS> --format=csv`
    NvidiaSmiQueryGpu,
    /// `nvidia-smi -q -x`
    NvidiaSmiQx,
    /// `nvidia-smi -q`
    NvidiaSmiQ,
    /// `nvidia-smi -L`
    NvidiaSmiL,
    /// `nvidia-smi` (the summary table; only scanned for `ERR!` and reset notices)
    NvidiaSmi,
    /// `uname -r`
    UnameR,
    /// `uname -m`
    UnameM,
    /// `nvcc --version` (PATH, then /usr/local/cuda/bin/nvcc)
    NvccVersion,
    /// `id`
    Id,
    /// `dmesg` (kernel log; often needs privileges)
    Dmesg,
    /// `ps -e -o comm=`
    PsComm,
    /// `nvidia-ctk --version`
    NvidiaCtkVersion,
    /// `nvidia-container-cli --version`
    NvidiaContainerCliVersion,
    /// `docker info --format '{{json .}}'`
    DockerInfo,
    /// `nvidia-smi topo -m` (GPU links and NUMA affinity)
    NvidiaSmiTopoM,
}

/// The fields asked of `nvidia-smi --query-gpu`, in this order.
pub const QUERY_GPU_FIELDS: &str = "index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,persistence_mode,mig.mode.current,ecc.mode.current";

impl HostCommand {
    pub const ALL: [HostCommand; 15] = [
        HostCommand::NvidiaSmiQueryGpu,
        HostCommand::NvidiaSmiQx,
        HostCommand::NvidiaSmiQ,
        HostCommand::NvidiaSmiL,
        HostCommand::NvidiaSmi,
        HostCommand::UnameR,
        HostCommand::UnameM,
        HostCommand::NvccVersion,
        HostCommand::Id,
        HostCommand::Dmesg,
        HostCommand::PsComm,
        HostCommand::NvidiaCtkVersion,
        HostCommand::NvidiaContainerCliVersion,
        HostCommand::DockerInfo,
        HostCommand::NvidiaSmiTopoM,
    ];

    /// Program and arguments.
    pub fn argv(&self) -> Vec<String> {
        let v: Vec<&str> = match self {
            HostCommand::NvidiaSmiQueryGpu => {
                return vec![
                    "nvidia-smi".into(),
                    format!("--query-gpu={QUERY_GPU_FIELDS}"),
                    "--format=csv".into(),
                ]
            }
            HostCommand::NvidiaSmiQx => vec!["nvidia-smi", "-q", "-x"],
            HostCommand::NvidiaSmiQ => vec!["nvidia-smi", "-q"],
            HostCommand::NvidiaSmiL => vec!["nvidia-smi", "-L"],
            HostCommand::NvidiaSmi => vec!["nvidia-smi"],
            HostCommand::UnameR => vec!["uname", "-r"],
            HostCommand::UnameM => vec!["uname", "-m"],
            HostCommand::NvccVersion => vec!["nvcc", "--version"],
            HostCommand::Id => vec!["id"],
            HostCommand::Dmesg => vec!["dmesg"],
            HostCommand::PsComm => vec!["ps", "-e", "-o", "comm="],
            HostCommand::NvidiaCtkVersion => vec!["nvidia-ctk", "--version"],
            HostCommand::NvidiaContainerCliVersion => vec!["nvidia-container-cli", "--version"],
            HostCommand::DockerInfo => vec!["docker", "info", "--format", "{{json .}}"],
            HostCommand::NvidiaSmiTopoM => vec!["nvidia-smi", "topo", "-m"],
        };
        v.into_iter().map(String::from).collect()
    }

    /// The command line as shown in evidence.
    pub fn display(&self) -> String {
        self.argv().join(" ")
    }

    /// File name under `.gpulint-host/commands/` in a captured tree.
    pub fn capture_name(&self) -> &'static str {
        match self {
            HostCommand::NvidiaSmiQueryGpu => "nvidia-smi--query-gpu.csv",
            HostCommand::NvidiaSmiQx => "nvidia-smi-q.xml",
            HostCommand::NvidiaSmiQ => "nvidia-smi-q.txt",
            HostCommand::NvidiaSmiL => "nvidia-smi-L.txt",
            HostCommand::NvidiaSmi => "nvidia-smi.txt",
            HostCommand::UnameR => "uname-r.txt",
            HostCommand::UnameM => "uname-m.txt",
            HostCommand::NvccVersion => "nvcc-version.txt",
            HostCommand::Id => "id.txt",
            HostCommand::Dmesg => "dmesg.txt",
            HostCommand::PsComm => "ps-comm.txt",
            HostCommand::NvidiaCtkVersion => "nvidia-ctk-version.txt",
            HostCommand::NvidiaContainerCliVersion => "nvidia-container-cli-version.txt",
            HostCommand::DockerInfo => "docker-info.json",
            HostCommand::NvidiaSmiTopoM => "nvidia-smi-topo-m.txt",
        }
    }
}

/// What running a command gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOutput {
    /// Not installed / not captured.
    NotFound,
    /// It ran. `status` is the exit code (None when killed by a signal).
    Ran {
        status: Option<i32>,
        stdout: String,
        stderr: String,
    },
}

impl CommandOutput {
    /// Stdout of a successful run.
    pub fn ok_stdout(&self) -> Option<&str> {
        match self {
            CommandOutput::Ran {
                status: Some(0),
                stdout,
                ..
            } => Some(stdout),
            _ => None,
        }
    }
    /// Stdout and stderr of a run, whatever its status (error messages live there).
    pub fn any_output(&self) -> Option<String> {
        match self {
            CommandOutput::NotFound => None,
            CommandOutput::Ran { stdout, stderr, .. } => Some(format!("{stdout}{stderr}")),
        }
    }
    pub fn failed(&self) -> bool {
        matches!(self, CommandOutput::Ran { status, .. } if *status != Some(0))
    }
}

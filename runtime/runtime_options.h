// Every setting of the worker runtime, with the flag and environment variable
// that set it. Every worker of a cluster should use the same values
// (--grpc_bdp_probe may differ: it sets only the windows a worker announces).
//
//   RuntimeOptions options;
//   options.Register(&flags);          // --startup_timeout_s, --collective_timeout_s, ...
//   ... flags.Parse(argc, argv) ...
//   RW_RETURN_IF_ERROR(options.Finish());   // validates and fills derived fields
//
// Programs that parse no flags (apps embedding the strategy) need not do anything:
// WorkerRuntime::Listen calls ApplyEnvironmentAndFinish() on options that were not
// finished, so the RINGWORK_* variables (the cluster token, TLS files, timeouts,
// heartbeats, transport) reach every app. Precedence, highest first: a value the
// code set, a flag, the environment variable, the default. ("Set" means changed
// from the default: code that sets a value equal to the default does not keep
// the environment out. TLS credentials or a token set in code always win.) An
// app that parses no flags should not call Finish() itself.
#ifndef RINGWORK_RUNTIME_RUNTIME_OPTIONS_H_
#define RINGWORK_RUNTIME_RUNTIME_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "base/flags.h"
#include "observability/timeline.h"
#include "runtime/auth/tls_credentials.h"
#include "runtime/collectives/collective_options.h"
#include "runtime/heartbeat_monitor.h"
#include "runtime/transport/grpc/grpc_link.h"
#include "runtime/transport/grpc/rendezvous.h"
#include "runtime/transport/transport.h"

namespace ringwork {

struct RuntimeOptions {
  RendezvousOptions rendezvous;  // --startup_timeout_s
  // Deadline of each collective until the first training step has ended (the
  // chief's initial broadcast, the first step's all-reduces: peers may still be
  // loading data). Flag --first_step_timeout_s, env RINGWORK_FIRST_STEP_TIMEOUT_S.
  double first_step_timeout_s = 600;
  CollectiveOptions collectives;  // --collective_timeout_s (steady state), ...
  HeartbeatOptions heartbeat;     // --heartbeat_interval_s, --heartbeat_misses, ...
  Transport::Options transport;   // --spin_us
  GrpcLink::Options grpc;
  // "auto": shared memory between workers on one host, gRPC otherwise; "grpc":
  // gRPC for every peer. Flag --transport, env RINGWORK_TRANSPORT.
  std::string transport_kind = "auto";
  // gRPC's bandwidth-delay probe on the data connections: without it (the
  // default) a connection's flow-control window stays at 64 KiB and a frame over
  // that waits one round trip for a WINDOW_UPDATE; with it the window grows (at
  // least 4 MiB), which was faster up to 1 MiB on loopback but slower from 4 MiB
  // under BBR (grpc_util.h, docs/PERFORMANCE.md). Flag --grpc_bdp_probe, env
  // RINGWORK_GRPC_BDP_PROBE.
  bool grpc_bdp_probe = false;
  // Bytes of each shared-memory ring (one per direction per pair of local workers).
  int64_t shm_ring_bytes = 4 << 20;
  // How long an orderly shutdown may take before streams are cancelled.
  double shutdown_timeout_s = 10;
  // Spinning before sleeping in a wait (Transport::Options::spin_us); -1: 50 us.
  double spin_us = -1;
  // Keep freed large blocks in the process (mallopt), so that gRPC's per-frame
  // buffers are not returned to the kernel and faulted in again. Process-wide.
  bool tune_malloc = true;
  // Authentication (runtime/auth/rpc_auth.h): the cluster token, read by Finish()
  // from --cluster_token_file or env RINGWORK_CLUSTER_TOKEN (never a flag value);
  // empty: calls are not authenticated.
  std::string cluster_token_file;
  std::string cluster_token;
  // Mutual TLS (--tls_ca, --tls_cert, --tls_key); Finish() loads `tls` from them
  // unless the code set `tls.server` and `tls.channel` itself.
  TlsFiles tls_files;
  TlsCredentials tls;
  // A Chrome trace-event timeline of this worker (observability/timeline.h),
  // written to this file by WorkerRuntime::Shutdown; empty: none is recorded.
  // Flag --timeline, env RINGWORK_TIMELINE (launch --timeline sets it per task).
  std::string timeline_path;
  // Bounds: --timeline_steps=A:B (training steps A to B of the run, counted from 1,
  // both included; "A:" or ":B" leave one end open) and --timeline_max_events (a
  // ring: the oldest events are dropped).
  Timeline::Options timeline;

  void Register(FlagSet* flags);
  // Validates values, copies the flag-level fields into the nested options, loads
  // the cluster token (unless the code set `cluster_token`) and the TLS files
  // (unless none is named and the code set `tls`). Does nothing the second time.
  absl::Status Finish();
  // For options no flag parser filled: every setting the code left at its default
  // takes its environment variable (RINGWORK_*), then Finish(). Does nothing when
  // Finish() already ran (the flags' parser read the environment then).
  absl::Status ApplyEnvironmentAndFinish();
  bool finished() const { return finished_; }

 private:
  bool finished_ = false;
  std::string allreduce_algorithm_ = "auto";
  std::string timeline_steps_;
  int64_t segment_bytes_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_RUNTIME_OPTIONS_H_

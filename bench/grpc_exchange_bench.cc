// grpc_exchange_bench: what one small exchange between two processes costs over raw
// gRPC, with no Ringwork code in the path: the async generic API, the completion
// queue polled with a past deadline and the data streams' HTTP/2 settings, as
// Ringwork's gRPC links use them. It differs from a GrpcLink in sending each frame
// as one slice (a link sends a 64-byte header slice and the payload) and in posting
// no watch Read on the call it opened. Two stream layouts:
//   two streams: one call per direction (GrpcLink's layout until protocol 3: each
//                process wrote on the call it opened and read the call its peer
//                opened);
//   one stream:  one bidirectional call per pair, opened by rank 0 (GrpcLink's
//                data call since protocol 4).
// Two patterns: "exchange" (both send at once and wait for each other's frame, as
// one step of a 2-rank all-reduce; the time is per exchange) and "ping-pong" (rank
// 0 sends, rank 1 answers; the time is per round trip). Two ways to post the next
// Read (`--read`): "at once" when a frame arrives (GrpcLink before 2026-12-04),
// or "owed" until the rank has written its own next frame or has nothing else to
// do but wait for the peer's (GrpcLink's way for small frames since: chttp2 sends a
// WINDOW_UPDATE as soon as a Read waits on a stream that has taken data).
//
//   bazel-bin/bench/grpc_exchange_bench --bytes=4 --iters=20000 --runs=7 --rounds=2 [--read=both]
//
// Every row runs two fresh processes, forked before gRPC starts, over 127.0.0.1.
// A row is the median of `--runs` blocks' average time (min..max beside it).
// `--rounds` repeats the rows one after the other, so that the noise shows.
// Compare with `allreduce_bench --transport=grpc` to see what Ringwork adds.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "runtime/transport/grpc/grpc_util.h"

namespace ringwork {
namespace {

// A rank that waits longer than this for its peer (a completion, the peer's port,
// the closing handshake) gives up: the peer died or hangs.
constexpr int kPeerTimeoutMs = 10000;
// gRPC's default receive limit; larger frames would need the limit raised.
constexpr int64_t kMaxFrameBytes = 4 << 20;

enum Event : intptr_t { kAccepted = 1, kStarted, kWritten, kRead };
void* TagOf(Event event) { return reinterpret_cast<void*>(event); }

struct RowOptions {
  bool one_stream = false;
  bool ping_pong = false;
  bool owed_read = false;
  bool bdp_probe = false;
  int64_t bytes = 4, iters = 20000, runs = 7, rounds = 2;
};

std::string RowName(const RowOptions& row) {
  return absl::StrCat(row.one_stream ? "one stream" : "two streams", ", ",
                      row.ping_pong ? "ping-pong" : "exchange", ", Read ",
                      row.owed_read ? "owed" : "at once");
}

// Waits for the next completion, spinning on the queue; exits the rank (status 1)
// when an operation fails or nothing completes within kPeerTimeoutMs.
Event NextEvent(grpc::CompletionQueue* cq, int rank) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kPeerTimeoutMs);
  for (int idle = 1; std::chrono::steady_clock::now() < give_up; ++idle) {
    void* tag = nullptr;
    bool ok = false;
    if (cq->AsyncNext(&tag, &ok, gpr_inf_past(GPR_CLOCK_MONOTONIC)) !=
        grpc::CompletionQueue::GOT_EVENT) {
      // As Transport::Wait's spin does: let another runnable thread on this core
      // (the peer, with more ranks than cores) go first now and then.
      if (idle % 16 == 0) std::this_thread::yield();
      continue;
    }
    if (!ok) {
      RW_LOG(ERROR) << "rank " << rank << ": a gRPC operation failed (event "
                    << reinterpret_cast<intptr_t>(tag) << "): the peer is gone";
      _exit(1);
    }
    return static_cast<Event>(reinterpret_cast<intptr_t>(tag));
  }
  RW_LOG(ERROR) << "rank " << rank << ": no gRPC completion in " << kPeerTimeoutMs << " ms";
  _exit(1);
}

// Reads one int from `fd` within kPeerTimeoutMs; false on timeout or end of file.
bool ReadIntWithin(int fd, int* value) {
  pollfd ready{fd, POLLIN, 0};
  if (poll(&ready, 1, kPeerTimeoutMs) != 1) return false;
  return read(fd, value, sizeof *value) == static_cast<ssize_t>(sizeof *value);
}

bool WriteInt(int fd, int value) {
  return write(fd, &value, sizeof value) == static_cast<ssize_t>(sizeof value);
}

// One rank of a pair: serves on a port it reports on `to_peer`, learns the peer's
// from `from_peer`, times the blocks (rank 0 prints the row), then waits for the
// peer to be done too (on the same pipes) before it exits.
[[noreturn]] void RunRank(int rank, const RowOptions& row, int to_peer, int from_peer) {
  grpc::AsyncGenericService service;
  grpc::ServerBuilder builder;
  int my_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &my_port);
  builder.RegisterAsyncGenericService(&service);
  for (const auto& [key, value] : DataStreamChannelSettings(row.bdp_probe))
    builder.AddChannelArgument(key, value);
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  int peer_port = 0;
  if (server == nullptr || my_port <= 0 || !WriteInt(to_peer, my_port) ||
      !ReadIntWithin(from_peer, &peer_port)) {
    RW_LOG(ERROR) << "rank " << rank << ": could not serve on 127.0.0.1 or learn the peer's port";
    _exit(1);
  }

  grpc::GenericServerContext server_context;
  grpc::GenericServerAsyncReaderWriter inbound(&server_context);
  const bool accepts = !row.one_stream || rank == 1;
  const bool opens = !row.one_stream || rank == 0;
  if (accepts) service.RequestCall(&server_context, &inbound, cq.get(), cq.get(), TagOf(kAccepted));
  grpc::ClientContext client_context;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> outbound;
  grpc::ChannelArguments args;
  for (const auto& [key, value] : DataStreamChannelSettings(row.bdp_probe)) args.SetInt(key, value);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      absl::StrCat("127.0.0.1:", peer_port), grpc::InsecureChannelCredentials(), args);
  grpc::GenericStub stub(channel);
  if (opens) {
    outbound = stub.PrepareCall(&client_context, "/bench/Exchange", cq.get());
    outbound->StartCall(TagOf(kStarted));
  }
  for (int pending = int{accepts} + int{opens}; pending > 0; --pending) NextEvent(cq.get(), rank);

  // Frames go out on the call this rank opened (one stream: rank 1 answers on the
  // call it accepted) and come in on the call it accepted (one stream: rank 0
  // reads the call it opened).
  grpc::ByteBuffer incoming;
  auto post_read = [&] {
    if (row.one_stream && rank == 0) {
      outbound->Read(&incoming, TagOf(kRead));
    } else {
      inbound.Read(&incoming, TagOf(kRead));
    }
  };
  std::vector<char> payload(static_cast<size_t>(row.bytes), 1);
  auto post_write = [&] {
    grpc::Slice slice(payload.data(), payload.size(), grpc::Slice::STATIC_SLICE);
    grpc::ByteBuffer frame(&slice, 1);
    if (row.one_stream && rank == 1) {
      inbound.Write(frame, TagOf(kWritten));
    } else {
      outbound->Write(frame, TagOf(kWritten));
    }
  };
  // Frames received so far: the peer's frame of exchange g may arrive before this
  // rank's own write of it has completed, even before the next exchange begins.
  int64_t received = 0;
  int64_t exchange = 0;
  bool read_owed = false;  // The next Read is not posted yet.
  auto post_read_if_owed = [&] {
    if (!read_owed) return;
    read_owed = false;
    post_read();
  };
  bool written = false;
  auto on_event = [&](Event event) {
    if (event == kWritten) {
      written = true;
      return;
    }
    if (static_cast<int64_t>(incoming.Length()) != row.bytes) {
      RW_LOG(ERROR) << "rank " << rank << ": a frame of " << incoming.Length()
                    << " bytes, expected " << row.bytes;
      _exit(1);
    }
    ++received;
    read_owed = true;
    if (!row.owed_read) post_read_if_owed();
  };
  post_read();
  std::vector<double> block_us;
  for (int64_t run = -1; run < row.runs; ++run) {  // Run -1 warms up.
    const auto block_start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < row.iters; ++i, ++exchange) {
      written = false;
      if (row.ping_pong && rank == 1) {
        while (received <= exchange) {
          post_read_if_owed();  // Owed: nothing to write before the peer's frame.
          on_event(NextEvent(cq.get(), rank));
        }
      }
      post_write();
      post_read_if_owed();  // Owed: after this rank's own frame.
      while (!written || received <= exchange) {
        if (received <= exchange) post_read_if_owed();
        on_event(NextEvent(cq.get(), rank));
      }
    }
    const double block_elapsed_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - block_start)
            .count();
    if (run >= 0) block_us.push_back(block_elapsed_us / static_cast<double>(row.iters));
  }
  std::sort(block_us.begin(), block_us.end());
  const size_t middle = block_us.size() / 2;
  const double median =
      block_us.size() % 2 == 1 ? block_us[middle] : (block_us[middle - 1] + block_us[middle]) / 2;
  if (rank == 0) {
    std::printf("| %-11s | %-9s | %-7s | %8.1f | %6.1f..%-6.1f |\n",
                row.one_stream ? "one stream" : "two streams",
                row.ping_pong ? "ping-pong" : "exchange", row.owed_read ? "owed" : "at once",
                median, block_us.front(), block_us.back());
    std::fflush(stdout);
  }
  // Both ranks have every frame now; each tells the other and waits to hear the
  // same before it exits (the calls end without an orderly close: not measured).
  int done = 0;
  if (!WriteInt(to_peer, 1) || !ReadIntWithin(from_peer, &done)) {
    RW_LOG(ERROR) << "rank " << rank << ": the peer did not finish";
    _exit(1);
  }
  _exit(0);
}

// How a rank process ended, for the message when it failed.
std::string HowItEnded(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
  return "an unknown status";
}

// Forks the pair for one row and waits for both.
absl::Status RunRow(const RowOptions& row) {
  int port_pipe_to_rank1[2], port_pipe_to_rank0[2];
  if (pipe(port_pipe_to_rank1) != 0 || pipe(port_pipe_to_rank0) != 0) {
    return absl::InternalError("could not create the pipes between the two ranks");
  }
  // Each rank keeps only the ends it uses, so that a rank that dies ends the other's
  // wait on the pipe (end of file) instead of blocking it.
  const pid_t rank1_pid = fork();
  if (rank1_pid == 0) {
    close(port_pipe_to_rank1[1]);
    close(port_pipe_to_rank0[0]);
    RunRank(1, row, port_pipe_to_rank0[1], port_pipe_to_rank1[0]);
  }
  const pid_t rank0_pid = rank1_pid > 0 ? fork() : -1;
  if (rank0_pid == 0) {
    close(port_pipe_to_rank0[1]);
    close(port_pipe_to_rank1[0]);
    RunRank(0, row, port_pipe_to_rank1[1], port_pipe_to_rank0[0]);
  }
  for (int fd : {port_pipe_to_rank1[0], port_pipe_to_rank1[1], port_pipe_to_rank0[0],
                 port_pipe_to_rank0[1]}) {
    close(fd);
  }
  if (rank1_pid < 0 || rank0_pid < 0) {
    if (rank1_pid > 0) {
      kill(rank1_pid, SIGKILL);
      waitpid(rank1_pid, nullptr, 0);
    }
    return absl::InternalError(absl::StrCat("could not fork the ranks of row ", RowName(row)));
  }
  // Every wait inside the ranks is bounded (kPeerTimeoutMs), so these end.
  absl::Status result;
  const pid_t pids[2] = {rank0_pid, rank1_pid};
  for (int rank = 0; rank < 2; ++rank) {
    int status = 0;
    pid_t waited;
    do {
      waited = waitpid(pids[rank], &status, 0);
    } while (waited < 0 && errno == EINTR);
    if (waited != pids[rank] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (result.ok()) {
        result = absl::InternalError(absl::StrCat("rank ", rank, " of row ", RowName(row),
                                                  " failed (", HowItEnded(status), ")"));
      }
      kill(pids[1 - rank], SIGKILL);  // Harmless if it has ended.
    }
  }
  return result;
}

int Main(int argc, char** argv) {
  FlagSet flags(
      "grpc_exchange_bench: one small exchange between two processes over raw gRPC, "
      "one call per direction against one bidirectional call per pair");
  RowOptions row;
  flags.Int("bytes", &row.bytes, "payload of each frame (at most 4 MiB, gRPC's receive limit)");
  flags.Int("iters", &row.iters, "exchanges (or round trips) per block");
  flags.Int("runs", &row.runs, "measured blocks per row; the median is shown");
  flags.Int("rounds", &row.rounds, "times the rows are run, one after the other (noise shows)");
  flags.Bool("bdp_probe", &row.bdp_probe,
             "gRPC's bandwidth-delay probe on (Ringwork's --grpc_bdp_probe)");
  std::string read = "both";
  flags.String("read", &read, "when the next Read is posted: at_once, owed or both");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("grpc_exchange_bench");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (row.bytes < 1 || row.bytes > kMaxFrameBytes || row.iters < 1 || row.runs < 1 ||
      row.rounds < 1) {
    ExitWithStatus(absl::InvalidArgumentError(
        "--bytes must be in [1, 4194304]; --iters, --runs and --rounds must be positive"));
  }
  std::vector<bool> owed_reads;
  if (read == "at_once" || read == "both") owed_reads.push_back(false);
  if (read == "owed" || read == "both") owed_reads.push_back(true);
  if (owed_reads.empty()) {
    ExitWithStatus(absl::InvalidArgumentError(
        absl::StrCat("--read=", read, ": expected at_once, owed or both")));
  }
  std::printf(
      "%lld-byte frames, %lld per block, median of %lld blocks: us per exchange (ping-pong: "
      "per round trip)\n\n",
      static_cast<long long>(row.bytes), static_cast<long long>(row.iters),
      static_cast<long long>(row.runs));
  std::printf("| layout | pattern | next Read | median | min..max |\n|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (int64_t round = 0; round < row.rounds; ++round) {
    for (bool ping_pong : {false, true}) {
      for (bool owed_read : owed_reads) {
        for (bool one_stream : {false, true}) {
          row.one_stream = one_stream;
          row.ping_pong = ping_pong;
          row.owed_read = owed_read;
          absl::Status done = RunRow(row);
          if (!done.ok()) ExitWithStatus(done);
        }
      }
    }
  }
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }

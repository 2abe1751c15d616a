// grpc_exchange_bench: what one small exchange between two processes costs over raw
// gRPC (async generic API, completion queue polled with a past deadline, as
// Ringwork's links do), in two stream layouts:
//   two streams: one call per direction (GrpcLink's layout: each worker writes on
//                the call it opened and reads the call its peer opened), so each
//                side's HTTP/2 WINDOW_UPDATEs travel on the other TCP connection;
//   one stream:  one bidirectional call per pair, so data and window updates share
//                a connection and the peer reads both in one recvmsg.
// And two patterns: "exchange" (both send at once and wait for each other's frame,
// as one step of a 2-rank all-reduce) and "ping-pong" (rank 0 sends, rank 1
// answers).
//
//   bazel-bin/tools/grpc_exchange_bench --bytes=4 --iters=20000 --runs=7 --rounds=2
//
// Every row runs two fresh processes (forked before gRPC starts) over 127.0.0.1;
// the row is the median of `--runs` blocks' average time per exchange (min..max
// beside it). It measures gRPC, not Ringwork: compare with allreduce_bench
// --transport=grpc to see what Ringwork adds.
#include <sys/wait.h>
#include <unistd.h>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "runtime/transport/grpc/grpc_util.h"

namespace ringwork {
namespace {

enum Event : intptr_t { kAccepted = 1, kStarted, kWritten, kRead };
void* TagOf(Event event) { return reinterpret_cast<void*>(event); }

struct Setup {
  bool one_stream = false;
  bool ping_pong = false;
  int64_t bytes = 4, iters = 20000, runs = 7, rounds = 2;
};

// Waits for the next completion, spinning on the queue (at most 10 s: a peer that
// died would otherwise leave this one spinning forever).
Event NextEvent(grpc::CompletionQueue* cq) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    void* tag = nullptr;
    bool ok = false;
    if (cq->AsyncNext(&tag, &ok, gpr_inf_past(GPR_CLOCK_MONOTONIC)) ==
        grpc::CompletionQueue::GOT_EVENT) {
      RW_CHECK(ok) << "a gRPC operation failed (event " << reinterpret_cast<intptr_t>(tag) << ")";
      return static_cast<Event>(reinterpret_cast<intptr_t>(tag));
    }
    RW_CHECK(std::chrono::steady_clock::now() < give_up) << "no gRPC completion in 10 s";
  }
}

// One rank of a pair: serves on a port it reports through `port_out`, learns the
// peer's from `port_in`, then times the blocks; rank 0 prints the row.
void RunRank(int rank, const Setup& setup, int port_out, int port_in) {
  grpc::AsyncGenericService service;
  grpc::ServerBuilder builder;
  int my_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &my_port);
  builder.RegisterAsyncGenericService(&service);
  for (const auto& [key, value] : DataStreamChannelSettings()) builder.AddChannelArgument(key, value);
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  RW_CHECK(server != nullptr && my_port > 0) << "could not serve on 127.0.0.1";
  RW_CHECK(write(port_out, &my_port, sizeof my_port) == static_cast<ssize_t>(sizeof my_port));
  int peer_port = 0;
  RW_CHECK(read(port_in, &peer_port, sizeof peer_port) == static_cast<ssize_t>(sizeof peer_port));

  grpc::GenericServerContext server_context;
  grpc::GenericServerAsyncReaderWriter inbound(&server_context);
  const bool accepts = !setup.one_stream || rank == 1;
  const bool opens = !setup.one_stream || rank == 0;
  if (accepts) service.RequestCall(&server_context, &inbound, cq.get(), cq.get(), TagOf(kAccepted));
  grpc::ClientContext client_context;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> outbound;
  grpc::ChannelArguments args;
  for (const auto& [key, value] : DataStreamChannelSettings()) args.SetInt(key, value);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(peer_port), grpc::InsecureChannelCredentials(), args);
  grpc::GenericStub stub(channel);
  if (opens) {
    outbound = stub.PrepareCall(&client_context, "/bench/Exchange", cq.get());
    outbound->StartCall(TagOf(kStarted));
  }
  for (int pending = int{accepts} + int{opens}; pending > 0; --pending) NextEvent(cq.get());

  // Frames go out on the call this rank opened (one stream: rank 1 answers on the
  // call it accepted) and come in on the call it accepted (one stream: rank 0
  // reads the call it opened).
  grpc::ByteBuffer incoming;
  auto post_read = [&] {
    if (setup.one_stream && rank == 0) {
      outbound->Read(&incoming, TagOf(kRead));
    } else {
      inbound.Read(&incoming, TagOf(kRead));
    }
  };
  std::vector<char> payload(static_cast<size_t>(setup.bytes), 1);
  auto post_write = [&] {
    grpc::Slice slice(payload.data(), payload.size(), grpc::Slice::STATIC_SLICE);
    grpc::ByteBuffer frame(&slice, 1);
    if (setup.one_stream && rank == 1) {
      inbound.Write(frame, TagOf(kWritten));
    } else {
      outbound->Write(frame, TagOf(kWritten));
    }
  };
  post_read();
  std::vector<double> block_us;
  // Frames received so far: the peer's frame of exchange g may arrive before this
  // rank's own write of it has completed, even before the next exchange begins.
  int64_t received = 0;
  int64_t exchange = 0;
  for (int64_t run = -1; run < setup.runs; ++run) {  // Run -1 warms up.
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < setup.iters; ++i, ++exchange) {
      auto on_event = [&](Event event, bool* written) {
        if (event == kWritten) {
          *written = true;
        } else {
          ++received;
          post_read();  // At once, as GrpcLink does.
        }
      };
      bool written = false;
      if (setup.ping_pong && rank == 1) {
        while (received <= exchange) on_event(NextEvent(cq.get()), &written);
      }
      post_write();
      while (!written || received <= exchange) on_event(NextEvent(cq.get()), &written);
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (run >= 0) block_us.push_back(us / static_cast<double>(setup.iters));
  }
  std::sort(block_us.begin(), block_us.end());
  if (rank == 0) {
    std::printf("| %-11s | %-9s | %8.1f | %6.1f..%-6.1f |\n",
                setup.one_stream ? "one stream" : "two streams",
                setup.ping_pong ? "ping-pong" : "exchange", block_us[block_us.size() / 2],
                block_us.front(), block_us.back());
    std::fflush(stdout);
  }
  // Both ranks are done with every frame; the process ends without an orderly
  // close (not what is measured), once the peer has surely read the last frame.
  usleep(200000);
  _exit(0);
}

// Forks the pair for one row and waits for both.
void RunRow(const Setup& setup) {
  int to_one[2], to_zero[2];
  RW_CHECK(pipe(to_one) == 0 && pipe(to_zero) == 0);
  // Each rank keeps only the ends it uses, so that a rank that dies before it
  // reported its port ends the other's read (end of file) instead of blocking it.
  const pid_t one = fork();
  RW_CHECK(one >= 0) << "fork failed";
  if (one == 0) {
    close(to_one[1]);
    close(to_zero[0]);
    RunRank(1, setup, to_zero[1], to_one[0]);
  }
  const pid_t zero = fork();
  RW_CHECK(zero >= 0) << "fork failed";
  if (zero == 0) {
    close(to_zero[1]);
    close(to_one[0]);
    RunRank(0, setup, to_one[1], to_zero[0]);
  }
  for (int fd : {to_one[0], to_one[1], to_zero[0], to_zero[1]}) close(fd);
  for (pid_t pid : {one, zero}) {
    int status = 0;
    waitpid(pid, &status, 0);
    RW_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a rank failed";
  }
}

int Main(int argc, char** argv) {
  FlagSet flags(
      "grpc_exchange_bench: one small exchange between two processes over raw gRPC, "
      "one call per direction against one bidirectional call per pair");
  Setup setup;
  flags.Int("bytes", &setup.bytes, "payload of each frame");
  flags.Int("iters", &setup.iters, "exchanges per block");
  flags.Int("runs", &setup.runs, "measured blocks per row; the median is shown");
  flags.Int("rounds", &setup.rounds, "times the four rows are run, one after the other (noise shows)");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (setup.bytes < 1 || setup.iters < 1 || setup.runs < 1 || setup.rounds < 1) {
    ExitWithStatus(
        absl::InvalidArgumentError("--bytes, --iters, --runs and --rounds must be positive"));
  }
  std::printf("%lld-byte frames, %lld exchanges a block, median of %lld blocks (us per exchange)\n\n",
              static_cast<long long>(setup.bytes), static_cast<long long>(setup.iters),
              static_cast<long long>(setup.runs));
  std::printf("| layout | pattern | median | min..max |\n|---|---|---|---|\n");
  std::fflush(stdout);
  for (int64_t round = 0; round < setup.rounds; ++round) {
    for (bool ping_pong : {false, true}) {
      for (bool one_stream : {false, true}) {
        setup.one_stream = one_stream;
        setup.ping_pong = ping_pong;
        RunRow(setup);
      }
    }
  }
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }

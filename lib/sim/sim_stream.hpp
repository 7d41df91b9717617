// Stream: the in-order queue of one sim backend, run by its own worker thread.
//
// The host enqueues operations and returns at once; the worker runs them one after another.
// synchronize() waits until everything enqueued so far has run. The first error an operation
// returns is kept until take_error(). Destruction runs what is queued, then joins the worker.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "core/status.hpp"

namespace xb::sim {

class Stream {
public:
    using Operation = std::function<Status()>;

    Stream();
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    void enqueue(Operation op);
    void synchronize();
    // The first error of an operation since the last call (Ok when none); clears it.
    Status take_error();

private:
    void run();

    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable drained_;
    std::deque<Operation> queue_;
    bool running_op_ = false;
    bool stopping_ = false;
    Status first_error_;
    std::thread worker_;  // last: starts once everything above exists
};

}  // namespace xb::sim

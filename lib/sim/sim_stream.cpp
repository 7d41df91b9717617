#include "sim/sim_stream.hpp"

namespace xb::sim {

Stream::Stream() : worker_([this] { run(); }) {}

Stream::~Stream() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_one();
    worker_.join();  // the worker empties the queue before it leaves
}

void Stream::enqueue(Operation op) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(op));
    }
    work_ready_.notify_one();
}

void Stream::synchronize() {
    std::unique_lock<std::mutex> lock(mutex_);
    drained_.wait(lock, [this] { return queue_.empty() && !running_op_; });
}

Status Stream::take_error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(first_error_, Status::ok());
}

void Stream::run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to run
        Operation op = std::move(queue_.front());
        queue_.pop_front();
        running_op_ = true;
        lock.unlock();
        Status status = op();
        op = nullptr;  // release what the operation holds before the host may see the queue drained
        lock.lock();
        running_op_ = false;
        if (!status.is_ok() && first_error_.is_ok()) first_error_ = std::move(status);
        if (queue_.empty()) drained_.notify_all();
    }
}

}  // namespace xb::sim

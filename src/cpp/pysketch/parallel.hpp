// parallel.hpp - pysketch's thread pool and its process-wide thread count (header-only, C++17).
//
//   pysketch::get_num_threads() / set_num_threads(k)
//       How many threads a parallel call may use, the calling thread included. The default
//       is the number of CPUs this process may run on (its affinity mask on Linux), unless
//       the environment variable PYSKETCH_NUM_THREADS holds a positive integer.
//
//   pysketch::parallel_for(n, fn)
//       Splits [0, n) into contiguous ranges and calls fn(begin, end) on each, spread over
//       up to get_num_threads() threads; the calling thread works too. Returns when every
//       range is done and rethrows the first exception a range threw.
//
// The pool's worker threads are created on first need and then sleep on a condition
// variable between jobs. One parallel job runs at a time: a parallel_for called while
// another one runs (from another thread, or nested inside fn) runs its ranges on its own
// calling thread instead of waiting, so concurrent and nested calls can never deadlock.
// After fork() the child starts a fresh pool (the parent's workers do not exist there).
#ifndef PYSKETCH_PARALLEL_HPP
#define PYSKETCH_PARALLEL_HPP

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define PYSKETCH_HAVE_PTHREAD_ATFORK 1
#endif

namespace pysketch {

// Upper limit accepted by set_num_threads and PYSKETCH_NUM_THREADS.
inline constexpr int max_num_threads = 1024;

namespace detail {

// Number of CPUs this process may run on.
inline int available_cpus()
{
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int count = CPU_COUNT(&set);
        if (count > 0) return count;
    }
#endif
    const unsigned count = std::thread::hardware_concurrency();
    return count > 0 ? static_cast<int>(std::min<unsigned>(count, max_num_threads)) : 1;
}

// A thread count from the environment: a decimal integer in [1, max_num_threads],
// optionally surrounded by blanks; 0 when the text is missing or not such a number.
inline int parse_num_threads(const char *text)
{
    if (text == nullptr) return 0;
    while (*text == ' ' || *text == '\t') ++text;
    long value = 0;
    int digits = 0;
    for (; *text >= '0' && *text <= '9'; ++text, ++digits) {
        value = value * 10 + (*text - '0');
        if (value > max_num_threads) return 0;
    }
    while (*text == ' ' || *text == '\t') ++text;
    if (digits == 0 || *text != '\0' || value < 1) return 0;
    return static_cast<int>(value);
}

inline int default_num_threads()
{
    const int from_env = parse_num_threads(std::getenv("PYSKETCH_NUM_THREADS"));
    return from_env > 0 ? from_env : available_cpus();
}

// 0 until first read or set.
inline std::atomic<int> &num_threads_setting()
{
    static std::atomic<int> setting{0};
    return setting;
}

}  // namespace detail

inline int get_num_threads()
{
    std::atomic<int> &setting = detail::num_threads_setting();
    int current = setting.load(std::memory_order_relaxed);
    if (current > 0) return current;
    int unset = 0;
    setting.compare_exchange_strong(unset, detail::default_num_threads(), std::memory_order_relaxed);
    return setting.load(std::memory_order_relaxed);
}

inline void set_num_threads(int count)
{
    if (count < 1 || count > max_num_threads)
        throw std::invalid_argument("num_threads must be in [1, " + std::to_string(max_num_threads) +
                                    "], got " + std::to_string(count));
    detail::num_threads_setting().store(count, std::memory_order_relaxed);
}

// A persistent pool of worker threads running one job at a time.
class ThreadPool {
public:
    ThreadPool() = default;
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    ~ThreadPool()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread &worker : workers_) worker.join();
    }

    // Calls task(i) for every i in [0, n_tasks) on at most `threads` threads, the
    // calling thread included; each thread claims the next index not yet taken. When
    // the pool is already running a job, the calling thread runs every task itself.
    template <class Task>
    void run(std::size_t n_tasks, std::size_t threads, Task &&task)
    {
        if (n_tasks == 0) return;
        const std::size_t helpers = std::min(std::max<std::size_t>(threads, 1), n_tasks) - 1;
        std::unique_lock<std::mutex> submit(submit_, std::defer_lock);
        if (helpers == 0 || !submit.try_lock()) {
            for (std::size_t i = 0; i < n_tasks; ++i) task(i);
            return;
        }
        using TaskType = std::remove_reference_t<Task>;
        Job job;
        job.call = [](const void *context, std::size_t i) {
            (*static_cast<TaskType *>(const_cast<void *>(context)))(i);
        };
        job.context = static_cast<const void *>(std::addressof(task));
        job.n_tasks = n_tasks;
        run_job(job, helpers);
    }

private:
    struct Job {
        void (*call)(const void *context, std::size_t i) = nullptr;
        const void *context = nullptr;
        std::size_t n_tasks = 0;
    };

    static constexpr std::size_t caller = ~std::size_t{0};

    void run_job(const Job &job, std::size_t helpers)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        try {
            while (workers_.size() < helpers) {
                const std::size_t index = workers_.size();
                workers_.emplace_back([this, index] { worker_main(index); });
            }
        } catch (const std::system_error &) {
            helpers = workers_.size();  // the system refused another thread: use those we have
        }
        job_ = job;
        helpers_ = helpers;
        next_ = 0;
        remaining_ = job.n_tasks;
        error_ = nullptr;
        lock.unlock();
        wake_.notify_all();
        lock.lock();
        work(lock, caller);
        // Wait only for tasks that others have claimed: a worker that wakes up after the
        // last task was claimed finds nothing to do and is not waited for.
        done_.wait(lock, [this] { return remaining_ == 0; });
        helpers_ = 0;
        job_ = Job();
        std::exception_ptr error = error_;
        error_ = nullptr;
        lock.unlock();
        if (error) std::rethrow_exception(error);
    }

    bool may_work(std::size_t index) const { return index == caller || index < helpers_; }

    // With `lock` held: claims tasks of the current job and runs them (unlocked) until
    // none is left to claim.
    void work(std::unique_lock<std::mutex> &lock, std::size_t index)
    {
        while (next_ < job_.n_tasks && may_work(index)) {
            const std::size_t i = next_++;
            const Job job = job_;
            lock.unlock();
            std::exception_ptr error;
            try {
                job.call(job.context, i);
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            if (error) {
                if (!error_) error_ = error;
                remaining_ -= job_.n_tasks - next_;  // drop the tasks nobody has claimed
                next_ = job_.n_tasks;
            }
            if (--remaining_ == 0) done_.notify_all();
        }
    }

    void worker_main(std::size_t index)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return stop_ || (next_ < job_.n_tasks && may_work(index)); });
            if (stop_) return;
            work(lock, index);
        }
    }

    std::mutex submit_;  // held by the thread whose job is running
    std::mutex mutex_;   // guards everything below
    std::condition_variable wake_;
    std::condition_variable done_;
    std::vector<std::thread> workers_;
    Job job_;
    std::size_t helpers_ = 0;    // workers that may take part in the current job
    std::size_t next_ = 0;       // first task not yet claimed
    std::size_t remaining_ = 0;  // tasks not yet finished
    bool stop_ = false;
    std::exception_ptr error_;
};

namespace detail {

inline std::atomic<ThreadPool *> &global_pool_slot()
{
    static std::atomic<ThreadPool *> slot{nullptr};
    return slot;
}

// In a forked child only the forking thread exists, and the parent's pool may have been
// locked by a thread that is gone: abandon it (never touch or free it) and start afresh.
inline void forget_pool_in_child() { global_pool_slot().store(nullptr, std::memory_order_relaxed); }

}  // namespace detail

// The process-wide pool. It is never destroyed: its sleeping workers end with the process,
// so no thread is joined during static destruction.
inline ThreadPool &global_thread_pool()
{
    std::atomic<ThreadPool *> &slot = detail::global_pool_slot();
    ThreadPool *pool = slot.load(std::memory_order_acquire);
    if (pool != nullptr) return *pool;
#if defined(PYSKETCH_HAVE_PTHREAD_ATFORK)
    static const bool registered = (pthread_atfork(nullptr, nullptr, &detail::forget_pool_in_child), true);
    (void)registered;
#endif
    auto *fresh = new ThreadPool();
    if (slot.compare_exchange_strong(pool, fresh, std::memory_order_acq_rel)) return *fresh;
    delete fresh;
    return *pool;
}

// Calls fn(begin, end) on contiguous ranges covering [0, n), on up to `threads` threads.
// The range is cut into a few pieces per thread, handed out on demand, so a thread that
// starts late (or shares its core with another process) leaves its share to the others.
template <class Fn>
void parallel_for(std::size_t n, std::size_t threads, Fn &&fn)
{
    if (n == 0) return;
    threads = std::min(std::max<std::size_t>(threads, 1), n);
    if (threads == 1) {
        fn(std::size_t{0}, n);
        return;
    }
    const std::size_t pieces = std::min(n, 4 * threads);
    global_thread_pool().run(pieces, threads, [&](std::size_t i) {
        fn(i * n / pieces, (i + 1) * n / pieces);
    });
}

template <class Fn>
void parallel_for(std::size_t n, Fn &&fn)
{
    parallel_for(n, static_cast<std::size_t>(get_num_threads()), std::forward<Fn>(fn));
}

}  // namespace pysketch

#endif  // PYSKETCH_PARALLEL_HPP

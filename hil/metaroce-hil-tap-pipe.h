/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_TAP_PIPE_H
#define METAROCE_HIL_TAP_PIPE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

/**
 * \file
 * The mixed-run fabric's frame path to a TAP device, in batches: a reader thread reads the
 * frames the kernel queued on the TAP and hands them to the consumer (the real-time simulator)
 * with one wake-up per batch, not one cross-thread event per frame; frames go out with one
 * write() each, from the consumer's thread. Without ns-3: the wake-up is a callback (the
 * fabric's schedules a drain with ScheduleWithContext), so it is tested on a socket pair.
 */

namespace metaroce
{
namespace hil
{

/// Frames between a TAP descriptor and a consumer thread.
class TapFramePipe
{
  public:
    /// Frames the pipe holds for the consumer, as ns-3 FdNetDevice's RxQueueSize default.
    static constexpr size_t DEFAULT_CAPACITY = 1000;
    /// Frames read in one go before they are queued under the lock.
    static constexpr size_t READ_BATCH = 64;
    /// The largest frame read (a TAP frame is at most its MTU plus the Ethernet header).
    static constexpr size_t MAX_FRAME = 65536 + 64;

    /// What the pipe counts.
    struct Counters
    {
        uint64_t read{0};        //!< frames read from the descriptor
        uint64_t queueDrops{0};  //!< frames dropped: capacity frames were queued already
        uint64_t wakeUps{0};     //!< consumer wake-ups (batches)
        uint64_t written{0};     //!< frames written
        uint64_t writeErrors{0}; //!< frames write() refused or cut short
    };

    /**
     * \param fd the TAP descriptor (not owned; made non-blocking by Start)
     * \param capacity frames queued for the consumer at most (beyond: dropped, counted)
     * \param wake called from the reader thread when frames wait and no wake-up is pending:
     *        the consumer must call Drain() once after it
     */
    TapFramePipe(int fd, size_t capacity, std::function<void()> wake);
    ~TapFramePipe();
    TapFramePipe(const TapFramePipe&) = delete;
    TapFramePipe& operator=(const TapFramePipe&) = delete;

    /// Start the reader thread. \return false with \p error if it could not.
    bool Start(std::string& error);

    /// Stop the reader thread (at once: it waits on the descriptor and a stop event).
    void Stop();

    /**
     * (The consumer's thread.) Hand every queued frame to \p handle (frame, size, frames still
     * queued after it), in the order read, and re-arm the wake-up. Frames the reader queues
     * meanwhile wait for the next wake-up. The frame's bytes may be changed in place; they are
     * valid during the call only.
     * \return frames handled
     */
    size_t Drain(const std::function<void(uint8_t*, uint32_t, size_t)>& handle);

    /// Write one frame (the consumer's thread). \return false (counted) if the descriptor
    /// refused it.
    bool Write(const uint8_t* frame, uint32_t size);

    /// \return frames read and not yet handed to the consumer.
    size_t Pending() const;

    /// \return the capacity.
    size_t Capacity() const
    {
        return m_capacity;
    }

    /// \return a copy of the counters (the consumer's thread: it writes).
    Counters GetCounters() const;

    /// \return why the reader thread stopped early ("" while it runs or after Stop).
    std::string ReaderError() const;

  private:
    /// The reader thread's loop.
    void ReadLoop();

    int m_fd;                            //!< the TAP
    int m_stopFd{-1};                    //!< eventfd that wakes the reader to stop
    std::atomic<bool> m_stopping{false}; //!< Stop() was called (read between batches)
    size_t m_capacity;                   //!< queue limit, frames
    std::function<void()> m_wake;        //!< the consumer's wake-up
    std::thread m_reader;                //!< the reader thread

    mutable std::mutex m_mutex;                //!< guards what follows
    std::vector<std::vector<uint8_t>> m_queue; //!< frames for the consumer, in order
    std::vector<std::vector<uint8_t>> m_free;  //!< buffers to reuse
    bool m_wakePending{false};                 //!< a wake-up was given, Drain not yet called
    Counters m_counters;                       //!< counters
    std::string m_readerError;                 //!< why the reader stopped
    std::vector<std::vector<uint8_t>> m_batch; //!< the consumer's batch (consumer thread only)
    /// Frames read and not yet handled: queued, or in the consumer's batch and not reached.
    std::atomic<size_t> m_pending{0};
    uint64_t m_written{0};     //!< frames written (consumer thread only)
    uint64_t m_writeErrors{0}; //!< frames refused (consumer thread only)
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_TAP_PIPE_H

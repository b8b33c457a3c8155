/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-tap-pipe.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace metaroce
{
namespace hil
{

TapFramePipe::TapFramePipe(int fd, size_t capacity, std::function<void()> wake)
    : m_fd(fd),
      m_capacity(capacity > 0 ? capacity : 1),
      m_wake(std::move(wake))
{
}

TapFramePipe::~TapFramePipe()
{
    Stop();
}

bool
TapFramePipe::Start(std::string& error)
{
    if (m_reader.joinable())
    {
        return true;
    }
    const int flags = fcntl(m_fd, F_GETFL);
    if (flags < 0 || fcntl(m_fd, F_SETFL, flags | O_NONBLOCK) < 0)
    {
        error = std::string("cannot make the TAP descriptor non-blocking: ") + std::strerror(errno);
        return false;
    }
    m_stopFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m_stopFd < 0)
    {
        error = std::string("eventfd: ") + std::strerror(errno);
        return false;
    }
    m_reader = std::thread([this]() { ReadLoop(); });
    return true;
}

void
TapFramePipe::Stop()
{
    if (!m_reader.joinable())
    {
        return;
    }
    m_stopping.store(true, std::memory_order_relaxed); // (a reader that never finds EAGAIN)
    const uint64_t one = 1;
    if (write(m_stopFd, &one, sizeof(one)) != ssize_t(sizeof(one)))
    {
        // (an eventfd write fails only on overflow, which one write cannot reach)
    }
    m_reader.join();
    close(m_stopFd);
    m_stopFd = -1;
    m_stopping.store(false, std::memory_order_relaxed);
}

void
TapFramePipe::ReadLoop()
{
    std::vector<uint8_t> frame(MAX_FRAME);
    std::vector<std::vector<uint8_t>> got;
    got.reserve(READ_BATCH);
    std::vector<std::vector<uint8_t>> spare;
    for (;;)
    {
        pollfd fds[2] = {{m_fd, POLLIN, 0}, {m_stopFd, POLLIN, 0}};
        const int n = poll(fds, 2, -1);
        if (n < 0)
        {
            if (errno == EINTR)
            {
                continue;
            }
            std::lock_guard<std::mutex> lock(m_mutex);
            m_readerError = std::string("poll: ") + std::strerror(errno);
            return;
        }
        if (fds[1].revents != 0)
        {
            return; // Stop()
        }
        if (fds[0].revents & (POLLERR | POLLNVAL))
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_readerError = "the TAP descriptor reported an error";
            return;
        }
        // Read what the kernel has queued, up to a batch, then queue it under one lock.
        bool more = true;
        while (more && !m_stopping.load(std::memory_order_relaxed))
        {
            std::string fatal;
            while (got.size() < READ_BATCH)
            {
                const ssize_t r = read(m_fd, frame.data(), frame.size());
                if (r < 0)
                {
                    if (errno == EINTR)
                    {
                        continue;
                    }
                    if (errno != EAGAIN && errno != EWOULDBLOCK)
                    {
                        fatal = std::string("read: ") + std::strerror(errno);
                    }
                    more = false;
                    break;
                }
                if (r == 0)
                {
                    fatal = "the TAP descriptor was closed";
                    more = false;
                    break;
                }
                std::vector<uint8_t> buffer;
                if (!spare.empty())
                {
                    buffer = std::move(spare.back());
                    spare.pop_back();
                }
                buffer.assign(frame.begin(), frame.begin() + r);
                got.push_back(std::move(buffer));
            }
            bool wake = false;
            {
                std::lock_guard<std::mutex> lock(m_mutex);
                m_counters.read += got.size();
                for (auto& f : got)
                {
                    if (m_pending.load(std::memory_order_relaxed) >= m_capacity)
                    {
                        ++m_counters.queueDrops; // the consumer is that far behind
                        spare.push_back(std::move(f));
                        continue;
                    }
                    m_queue.push_back(std::move(f));
                    m_pending.fetch_add(1, std::memory_order_relaxed);
                }
                if (!m_queue.empty() && !m_wakePending)
                {
                    m_wakePending = true;
                    ++m_counters.wakeUps;
                    wake = true;
                }
                // Buffers the consumer returned, for the next reads.
                while (!m_free.empty() && spare.size() < READ_BATCH)
                {
                    spare.push_back(std::move(m_free.back()));
                    m_free.pop_back();
                }
                if (!fatal.empty())
                {
                    m_readerError = fatal;
                }
            }
            got.clear();
            if (wake)
            {
                m_wake();
            }
            if (!fatal.empty())
            {
                return;
            }
        }
    }
}

size_t
TapFramePipe::Drain(const std::function<void(uint8_t*, uint32_t, size_t)>& handle)
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_batch.swap(m_queue);
        m_wakePending = false;
    }
    const size_t n = m_batch.size();
    for (size_t i = 0; i < n; ++i)
    {
        const size_t after = m_pending.fetch_sub(1, std::memory_order_relaxed) - 1;
        handle(m_batch[i].data(), uint32_t(m_batch[i].size()), after);
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    for (auto& f : m_batch)
    {
        if (m_free.size() < m_capacity)
        {
            m_free.push_back(std::move(f));
        }
    }
    m_batch.clear();
    return n;
}

bool
TapFramePipe::Write(const uint8_t* frame, uint32_t size)
{
    ssize_t w;
    do
    {
        w = write(m_fd, frame, size);
    } while (w < 0 && errno == EINTR);
    if (w != ssize_t(size))
    {
        ++m_writeErrors;
        return false;
    }
    ++m_written;
    return true;
}

size_t
TapFramePipe::Pending() const
{
    return m_pending.load(std::memory_order_relaxed);
}

TapFramePipe::Counters
TapFramePipe::GetCounters() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    Counters c = m_counters;
    c.written = m_written;
    c.writeErrors = m_writeErrors;
    return c;
}

std::string
TapFramePipe::ReaderError() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_readerError;
}

} // namespace hil
} // namespace metaroce

/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-tx-batch.h"

#include <cerrno>
#include <cstring>
#include <netinet/in.h>

namespace metaroce
{
namespace hil
{
namespace
{

/// Room for one IP_TOS control message.
constexpr size_t CONTROL_BYTES = CMSG_SPACE(sizeof(int));

} // namespace

TxBatch::TxBatch(size_t slots, size_t slotBytes)
    : m_buffers(slots * slotBytes),
      m_entries(slots),
      m_slotBytes(slotBytes),
      m_state(slots),
      m_index(slots),
      m_msgs(slots),
      m_iov(slots),
      m_control(slots * CONTROL_BYTES)
{
    m_free.reserve(slots);
    for (size_t i = slots; i-- > 0;)
    {
        m_free.push_back(uint32_t(i));
    }
}

TxBatch::Entry&
TxBatch::Append()
{
    Entry& e = m_entries[m_count++];
    uint32_t slot = m_free.back();
    m_free.pop_back();
    e = Entry();
    e.slot = slot;
    return e;
}

void
TxBatch::Unappend()
{
    m_free.push_back(m_entries[--m_count].slot);
}

TxBatch::Result
TxBatch::Flush()
{
    Result r;
    if (m_count == 0)
    {
        return r;
    }
    // Per entry: 0 queued and not yet tried, 1 tried and still queued, 2 sent or dropped.
    uint8_t* state = m_state.data();
    std::memset(state, 0, m_count);
    uint32_t* index = m_index.data();
    mmsghdr* msgs = m_msgs.data();
    iovec* iov = m_iov.data();
    for (size_t i = 0; i < m_count; ++i)
    {
        if (state[i] != 0)
        {
            continue;
        }
        // Every entry of this socket, in queue order.
        const int fd = m_entries[i].fd;
        size_t n = 0;
        for (size_t j = i; j < m_count; ++j)
        {
            if (state[j] == 0 && m_entries[j].fd == fd)
            {
                index[n++] = uint32_t(j);
                state[j] = 1;
            }
        }
        size_t done = 0;
        while (done < n)
        {
            size_t count = n - done;
            for (size_t k = 0; k < count; ++k)
            {
                Entry& e = m_entries[index[done + k]];
                iov[k] = {Buffer(e), e.length};
                msghdr& h = msgs[k].msg_hdr;
                std::memset(&msgs[k], 0, sizeof(msgs[k]));
                h.msg_name = e.toLen ? &e.to : nullptr;
                h.msg_namelen = e.toLen;
                h.msg_iov = &iov[k];
                h.msg_iovlen = 1;
                if (e.tos >= 0)
                {
                    uint8_t* control = m_control.data() + k * CONTROL_BYTES;
                    std::memset(control, 0, CONTROL_BYTES);
                    h.msg_control = control;
                    h.msg_controllen = CONTROL_BYTES;
                    cmsghdr* c = CMSG_FIRSTHDR(&h);
                    c->cmsg_level = IPPROTO_IP;
                    c->cmsg_type = IP_TOS;
                    c->cmsg_len = CMSG_LEN(sizeof(int));
                    std::memcpy(CMSG_DATA(c), &e.tos, sizeof(int));
                }
            }
            int sent = sendmmsg(fd, msgs, unsigned(count), MSG_DONTWAIT);
            if (sent > 0)
            {
                for (int k = 0; k < sent; ++k)
                {
                    Entry& e = m_entries[index[done + size_t(k)]];
                    ++r.frames;
                    r.bytes += e.countedLength;
                    state[index[done + size_t(k)]] = 2;
                }
                done += size_t(sent);
                continue;
            }
            int err = errno;
            if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS)
            {
                r.blocked = m_entries[index[done]].owner; // the rest waits for writability
                break;
            }
            // The first datagram is refused for good (too large, no route, ...): drop it.
            const Entry& e = m_entries[index[done]];
            if (r.failed++ == 0)
            {
                r.firstError = err;
                r.errorDestination = e.destination;
                r.errorLength = e.countedLength;
            }
            state[index[done]] = 2;
            ++done;
        }
    }
    // Keep what is still queued, in order; free the rest.
    size_t kept = 0;
    for (size_t i = 0; i < m_count; ++i)
    {
        if (state[i] == 2)
        {
            m_free.push_back(m_entries[i].slot);
        }
        else
        {
            if (kept != i)
            {
                m_entries[kept] = m_entries[i];
            }
            ++kept;
        }
    }
    m_count = kept;
    return r;
}

} // namespace hil
} // namespace metaroce

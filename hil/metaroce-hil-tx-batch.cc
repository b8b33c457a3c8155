/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-hil-tx-batch.h"

#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/udp.h>

namespace metaroce
{
namespace hil
{
namespace
{

/// Room for an IP_TOS and a UDP_SEGMENT control message.
constexpr size_t CONTROL_BYTES = CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t));
/// Most datagrams in one GSO message (the kernel's UDP_MAX_SEGMENTS is 64 or more).
constexpr size_t MAX_GSO_SEGMENTS = 64;
/// Most payload bytes in one GSO message (one UDP datagram's worth).
constexpr size_t MAX_GSO_BYTES = 65000;

} // namespace

TxBatch::TxBatch(size_t slots, size_t slotBytes)
    : m_buffers(slots * slotBytes),
      m_entries(slots),
      m_slotBytes(slotBytes),
      m_state(slots),
      m_index(slots),
      m_msgs(slots),
      m_iov(slots),
      m_control(slots * CONTROL_BYTES),
      m_msgSegments(slots)
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

size_t
TxBatch::BuildMessages(const uint32_t* index, size_t n)
{
    size_t count = 0;
    size_t pos = 0;
    while (pos < n)
    {
        const Entry& first = m_entries[index[pos]];
        // With GSO, following datagrams of the same size (the last may be shorter), to the
        // same destination with the same TOS, ride in one message of one segment size.
        size_t segments = 1;
        size_t bytes = first.length;
        while (m_gso && first.train && pos + segments < n && segments < MAX_GSO_SEGMENTS)
        {
            const Entry& prev = m_entries[index[pos + segments - 1]];
            const Entry& e = m_entries[index[pos + segments]];
            if (prev.length != first.length || e.length > first.length || e.tos != first.tos ||
                e.toLen != first.toLen || std::memcmp(&e.to, &first.to, first.toLen) != 0 ||
                bytes + e.length > MAX_GSO_BYTES)
            {
                break;
            }
            bytes += e.length;
            ++segments;
        }
        for (size_t k = 0; k < segments; ++k)
        {
            const Entry& e = m_entries[index[pos + k]];
            m_iov[pos + k] = {Buffer(e), e.length};
        }
        mmsghdr& m = m_msgs[count];
        std::memset(&m, 0, sizeof(m));
        msghdr& h = m.msg_hdr;
        h.msg_name = first.toLen ? const_cast<sockaddr_storage*>(&first.to) : nullptr;
        h.msg_namelen = first.toLen;
        h.msg_iov = &m_iov[pos];
        h.msg_iovlen = segments;
        uint8_t* control = m_control.data() + count * CONTROL_BYTES;
        std::memset(control, 0, CONTROL_BYTES);
        h.msg_control = control;
        h.msg_controllen = CONTROL_BYTES;
        size_t used = 0;
        cmsghdr* c = CMSG_FIRSTHDR(&h);
        if (first.tos >= 0)
        {
            c->cmsg_level = IPPROTO_IP;
            c->cmsg_type = IP_TOS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            std::memcpy(CMSG_DATA(c), &first.tos, sizeof(int));
            used += CMSG_SPACE(sizeof(int));
            c = CMSG_NXTHDR(&h, c);
        }
        if (segments > 1)
        {
            uint16_t segmentSize = uint16_t(first.length);
            c->cmsg_level = IPPROTO_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            std::memcpy(CMSG_DATA(c), &segmentSize, sizeof(segmentSize));
            used += CMSG_SPACE(sizeof(uint16_t));
        }
        h.msg_controllen = used;
        if (used == 0)
        {
            h.msg_control = nullptr;
        }
        m_msgSegments[count] = segments;
        ++count;
        pos += segments;
    }
    return count;
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
            size_t count = BuildMessages(index + done, n - done);
            int sent = sendmmsg(fd, msgs, unsigned(count), MSG_DONTWAIT);
            if (sent > 0)
            {
                size_t entries = 0;
                for (int k = 0; k < sent; ++k)
                {
                    entries += m_msgSegments[size_t(k)];
                }
                for (size_t k = 0; k < entries; ++k)
                {
                    Entry& e = m_entries[index[done + k]];
                    ++r.frames;
                    r.bytes += e.countedLength;
                    state[index[done + k]] = 2;
                }
                done += entries;
                continue;
            }
            int err = errno;
            if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS)
            {
                r.blocked = m_entries[index[done]].owner; // the rest waits for writability
                break;
            }
            if (m_msgSegments[0] > 1 && (err == EIO || err == EINVAL || err == ENOPROTOOPT))
            {
                // The kernel or the device refuses segmentation offload: send one by one.
                m_gso = false;
                r.gsoRefused = err;
                continue;
            }
            // The first message is refused for good (too large, no route, ...): drop it.
            for (size_t k = 0; k < m_msgSegments[0]; ++k)
            {
                const Entry& e = m_entries[index[done + k]];
                if (r.failed++ == 0)
                {
                    r.firstError = err;
                    r.errorDestination = e.destination;
                    r.errorLength = e.countedLength;
                }
                state[index[done + k]] = 2;
            }
            done += m_msgSegments[0];
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

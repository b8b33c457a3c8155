/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_HIL_TX_BATCH_H
#define METAROCE_HIL_TX_BATCH_H

#include <cstddef>
#include <cstdint>
#include <sys/socket.h>
#include <sys/uio.h>
#include <vector>

/**
 * \file
 * Batched transmission: datagrams (or frames) queued by a frame port's Send() go to the kernel
 * in one sendmmsg() per socket when the host flushes the port, once per pump run. The UDP port
 * has one socket per UDP source port (path), so a flush makes one call per path in use; the
 * raw port has one socket, so one call per flush. No allocation after construction.
 */

namespace metaroce
{
namespace hil
{

/// A queue of datagrams waiting for one sendmmsg() per socket.
class TxBatch
{
  public:
    /// One queued datagram.
    struct Entry
    {
        int fd{-1};                //!< socket to send it on
        void* owner{nullptr};      //!< the port's handle of that socket (returned when blocked)
        sockaddr_storage to{};     //!< destination address
        socklen_t toLen{0};        //!< its length (0: the socket's own)
        int tos{-1};               //!< IP_TOS control message value (-1: none)
        uint32_t length{0};        //!< bytes in the slot
        uint32_t countedLength{0}; //!< bytes to count as sent (the datagram, without framing)
        uint32_t destination{0};   //!< IPv4 destination, for error messages
        uint32_t slot{0};          //!< index of its buffer
        bool train{true};          //!< may ride in a GSO train with the datagrams after it
    };

    /// What a Flush() did.
    struct Result
    {
        uint64_t frames{0};           //!< handed to the kernel
        uint64_t bytes{0};            //!< their counted bytes
        uint64_t failed{0};           //!< refused for good (counted and dropped)
        int firstError{0};            //!< errno of the first refusal
        uint32_t errorDestination{0}; //!< its destination
        uint32_t errorLength{0};      //!< its length
        void* blocked{nullptr};       //!< owner of a socket that said EAGAIN (entries stay queued)
        int gsoRefused{0};            //!< errno of a refused GSO send (GSO is now off)
    };

    /**
     * \param slots datagrams the batch holds
     * \param slotBytes largest datagram (or frame) it holds
     */
    TxBatch(size_t slots, size_t slotBytes);

    /// \return true if no more datagrams fit.
    bool Full() const
    {
        return m_count == m_entries.size();
    }

    /// \return datagrams queued.
    size_t Size() const
    {
        return m_count;
    }

    /// \return the largest datagram a slot holds.
    size_t SlotBytes() const
    {
        return m_slotBytes;
    }

    /**
     * Queue a datagram: fill the returned entry's fields and write at most SlotBytes() bytes
     * to Buffer() of it. Only when !Full().
     */
    Entry& Append();

    /// \return the buffer of \p entry.
    uint8_t* Buffer(const Entry& entry)
    {
        return m_buffers.data() + size_t(entry.slot) * m_slotBytes;
    }

    /// Drop the entry Append() returned last (it could not be filled).
    void Unappend();

    /// Send what is queued, one sendmmsg() per socket, keeping each socket's order.
    Result Flush();

    /**
     * UDP generic segmentation offload: equal-sized datagrams to one destination go as one
     * message with a UDP_SEGMENT control message (the kernel splits them, or hands the whole
     * train to a GRO-enabled receiver). Turned off for good if the kernel refuses it.
     */
    void SetGso(bool on)
    {
        m_gso = on;
    }

    /// \return true while GSO is on.
    bool Gso() const
    {
        return m_gso;
    }

  private:
    /// Fill m_msgs from the entries \p index[0..n) of one socket. \return messages built.
    size_t BuildMessages(const uint32_t* index, size_t n);

    std::vector<uint8_t> m_buffers; //!< slot buffers
    std::vector<Entry> m_entries;   //!< queue, in send order
    std::vector<uint32_t> m_free;   //!< free slots
    size_t m_slotBytes;             //!< bytes per slot
    size_t m_count{0};              //!< entries queued
    // Flush() scratch, one element per slot.
    std::vector<uint8_t> m_state;      //!< per entry: untried, tried and queued, done
    std::vector<uint32_t> m_index;     //!< entries of the socket being sent
    std::vector<mmsghdr> m_msgs;       //!< sendmmsg() headers
    std::vector<iovec> m_iov;          //!< their buffers
    std::vector<uint8_t> m_control;    //!< their IP_TOS and UDP_SEGMENT control messages
    std::vector<size_t> m_msgSegments; //!< datagrams in each message
    bool m_gso{false};                 //!< UDP GSO on
};

} // namespace hil
} // namespace metaroce

#endif // METAROCE_HIL_TX_BATCH_H

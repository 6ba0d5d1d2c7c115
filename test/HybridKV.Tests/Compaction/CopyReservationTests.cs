using HybridKV.Checkpoints;
using HybridKV.Devices;
using HybridKV.Log;
using HybridKV.Operations;
using HybridKV.Tests.LargerThanMemory;
using HybridKV.Tests.Support;

namespace HybridKV.Tests.Compaction;

/// <summary>
/// Log compaction's copies take their room at the tail together (<see cref="CopyReservation"/>): one atomic add for a
/// batch, each copy a slot of it, and what the batch did not use written as unused records before the compactor leaves
/// protection, so scans, flushes, recovery and later compactions walk the room like any records.
/// </summary>
[Trait("Category", "Lifecycle")]
public sealed class CopyReservationTests
{
    private static readonly int RecordSize = LogRecord<long, long>.FixedSize;

    /// <summary>With values that expire, the records carry an expiry word: a slot left over unwritten would read as
    /// a record of the shorter size, and a walk of the page would step into the middle of the next.</summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Copies_share_one_room_at_the_tail_and_the_slots_left_over_read_as_unused_records(bool expiring)
    {
        int recordSize = expiring ? LogRecord<long, long>.MaxFixedSize : RecordSize;
        Expiration expiration = expiring ? Expiration.After(TimeSpan.FromDays(1)) : Expiration.Never;
        using var device = new MemoryDevice(512, 1L << 22);
        using var checkpoints = new MemoryCheckpointStore();
        StoreSettings settings = StoreOnDevice.Settings(device: device) with
        {
            CheckpointStore = checkpoints,
            MemoryCompactionMaxLiveFraction = 0,
        };
        const int Keys = 10;
        using (var store = StoreOnDevice.Create(settings))
        {
            using var session = store.NewSession();
            var addresses = new long[Keys];
            for (long k = 0; k < Keys; k++)
            {
                addresses[k] = store.TailAddress;
                session.Upsert(k, k * 10, expiration);
            }

            // Read-only from now on (still in memory), so that key 3 written again is a new record: its first is not
            // live and must not be copied.
            for (long filler = 1_000; store.Engine.Log.SafeReadOnlyAddress <= addresses[^1]; filler++)
            {
                session.Upsert(filler, filler);
            }

            Assert.True(store.HeadAddress <= addresses[0]);
            session.Upsert(3, 333, expiration);
            long roomStart = store.TailAddress;
            var reservation = new CopyReservation();
            var outcomes = new CopyForwardOutcome[Keys];
            StoreEngine<long, long, long, long, CountContext?, CountFunctions> engine = store.Engine;
            engine.Epoch.Protect(engine.LogCompactionEntry);
            try
            {
                for (int k = 0; k < Keys; k++)
                {
                    reservation.Expected = Keys - k;
                    outcomes[k] = engine.ConditionalCopyFromDevice(engine.Log.GetRecord<long, long>(addresses[k]),
                        addresses[k], addresses[k], engine.LogCompactionEntry, reservation);
                }
            }
            finally
            {
                engine.ReleaseReservation(reservation);
                engine.Epoch.Unprotect(engine.LogCompactionEntry);
            }

            Assert.Equal(Enumerable.Range(0, Keys).Select(k => k == 3 ? CopyForwardOutcome.NotLive : CopyForwardOutcome.Copied),
                outcomes);
            // One room for the ten records the batch expected: nine copies and one unused slot at its end, which a
            // walk of the page steps over to the records after it.
            long roomEnd = roomStart + (Keys * recordSize);
            Assert.Equal(roomEnd, store.TailAddress);
            session.Upsert(100, 1_000);
            List<(long Address, long Key, long Value)> room = store.Scan(roomStart, store.TailAddress)
                .Select(record => (record.Address, record.Key, record.Value)).ToList();
            Assert.Equal(Enumerable.Range(0, Keys).Where(k => k != 3).Select(k => (long)k).Append(100),
                room.Select(r => r.Key));
            Assert.Equal(Enumerable.Range(0, Keys - 1).Select(i => roomStart + (i * recordSize)).Append(roomEnd),
                room.Select(r => r.Address));
            Assert.All(room, r => Assert.Equal(r.Key * 10, r.Value));
            for (long k = 0; k < Keys; k++)
            {
                Assert.Equal((Status.Ok, k == 3 ? 333L : k * 10), session.ReadNow(k));
            }

            // Past the room, on the device: recovery reads the page with the room in it.
            for (long filler = 2_000; store.HeadAddress <= roomEnd; filler++)
            {
                session.Upsert(filler, filler);
            }

            await store.TakeCheckpointAsync(CheckpointKind.Full);
        }

        using var recovered = StoreOnDevice.Create(settings);
        await recovered.RecoverAsync();
        using var reader = recovered.NewSession();
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal((Status.Ok, k == 3 ? 333L : k * 10), reader.ReadNow(k));
        }

        Assert.Equal((Status.Ok, 1_000L), reader.ReadNow(100));
    }

    /// <summary>Records with and without an expiry word in one batch: the room is for the first one's size, the
    /// others are taken alone while it lasts, so nothing is left over (a room given up at each change of size left
    /// nearly all of it unused).</summary>
    [Fact]
    public void Copies_of_the_other_size_are_taken_alone_while_the_room_lasts()
    {
        using var device = new MemoryDevice(512, 1L << 22);
        using var store = StoreOnDevice.Create(StoreOnDevice.Settings(device: device) with
        {
            MemoryCompactionMaxLiveFraction = 0,
        });
        using var session = store.NewSession();
        const int Keys = 10;
        var addresses = new long[Keys];
        for (long k = 0; k < Keys; k++)
        {
            addresses[k] = store.TailAddress;
            session.Upsert(k, k * 10, k % 2 == 0 ? Expiration.After(TimeSpan.FromDays(1)) : Expiration.Never);
        }

        long roomStart = store.TailAddress;
        var reservation = new CopyReservation();
        StoreEngine<long, long, long, long, CountContext?, CountFunctions> engine = store.Engine;
        engine.Epoch.Protect(engine.LogCompactionEntry);
        try
        {
            for (int k = 0; k < Keys; k++)
            {
                // As the compactor counts: the records of this one's size the batch has left.
                reservation.Expected = (Keys - k + 1) / 2;
                Assert.Equal(CopyForwardOutcome.Copied, engine.ConditionalCopyFromDevice(
                    engine.Log.GetRecord<long, long>(addresses[k]), addresses[k], addresses[k], engine.LogCompactionEntry,
                    reservation));
            }
        }
        finally
        {
            engine.ReleaseReservation(reservation);
            engine.Epoch.Unprotect(engine.LogCompactionEntry);
        }

        Assert.Equal(roomStart + ((Keys / 2) * (RecordSize + LogRecord<long, long>.MaxFixedSize)), store.TailAddress);
        Assert.Equal(Enumerable.Range(0, Keys).Select(k => (long)k),
            store.Scan(roomStart, store.TailAddress).Select(record => record.Key).Order());
        for (long k = 0; k < Keys; k++)
        {
            Assert.Equal((Status.Ok, k * 10), session.ReadNow(k));
        }
    }

    [Fact]
    public void A_room_taken_in_one_system_state_is_not_used_in_another()
    {
        var reservation = new CopyReservation { Next = 64, End = 64 + (4 * RecordSize), RecordSize = RecordSize, StateWord = 7 };
        Assert.True(reservation.HasRoomIn(stateWord: 7));
        Assert.False(reservation.HasRoomIn(stateWord: 8));
        reservation.Next = reservation.End;
        Assert.False(reservation.HasRoomIn(stateWord: 7));
    }
}

namespace HybridKV.Operations;

/// <summary>The engine-level outcome of one attempt at an operation.</summary>
internal enum OperationStatus : byte
{
    /// <summary>Done: found, written or updated.</summary>
    Success,

    /// <summary>Done: the key does not exist.</summary>
    NotFound,

    /// <summary>Done: a device read the operation needed failed.</summary>
    Failed,

    /// <summary>A compare-and-swap on the index lost a race; start over from the index at once.</summary>
    RetryNow,

    /// <summary>Cannot finish now (an RMW in the fuzzy region, FASTER §6.3); continue in CompletePending.</summary>
    Pending,

    /// <summary>
    /// The record is below the head address: read it from the device (<see cref="StorageRead"/> says where) and
    /// continue in CompletePending.
    /// </summary>
    RecordOnStorage,

    /// <summary>
    /// The log has no free page frame yet; leave epoch protection, wait for log space, and start over.
    /// </summary>
    RetryLater,

    /// <summary>
    /// The operation's view of the CPR state is out of date: the key's record belongs to the next version (CPR
    /// §6.2.1), or the state moved while the operation waited for a page turn. The session refreshes its view
    /// (crossing its CPR point if due) and starts over.
    /// </summary>
    CrossVersion,
}

/// <summary>What an operation that returned <see cref="OperationStatus.RecordOnStorage"/> needs read.</summary>
/// <param name="RecordAddress">The address of the record to read.</param>
/// <param name="EntryAddress">
/// The address the key's index entry held when the operation looked: an update that continues after the read is
/// valid only if the entry still holds it (no newer record of the key was added meanwhile).
/// </param>
internal readonly record struct StorageRead(long RecordAddress, long EntryAddress);

namespace HybridKV.Log;

/// <summary>Constants of the 48-bit logical address space shared by memory and storage (FASTER §5.1).</summary>
internal static class LogAddress
{
    public const int Bits = 48;
    public const long MaxAddress = (1L << Bits) - 1;

    /// <summary>No record: the end of every hash chain.</summary>
    public const long Invalid = 0;

    /// <summary>
    /// The first address a record can have. Addresses below it are reserved (0 = invalid, 1 = the index's tentative
    /// record address), so a chain ends wherever it reaches an address below the begin address.
    /// </summary>
    public const long FirstValid = 64;
}

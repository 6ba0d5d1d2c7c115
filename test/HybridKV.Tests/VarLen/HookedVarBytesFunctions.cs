namespace HybridKV.Tests.VarLen;

/// <summary>What a test adds to <see cref="VarBytesFunctions"/>: code that runs before an updater (to stall, to throw).</summary>
internal interface IUpdateHooks
{
    void BeforeInPlaceUpdate(in VarBytes input);

    void BeforeCopyUpdate(in VarBytes input);
}

/// <summary><see cref="VarBytesFunctions"/> with <typeparamref name="THooks"/> run before its updaters.</summary>
internal readonly struct HookedVarBytesFunctions<THooks> : IFunctions<VarBytes, VarBytes, VarBytes, VarBytesOutput, Empty>
    where THooks : struct, IUpdateHooks
{
    private static VarBytesFunctions Plain => default;

    public long GetHashCode64(in VarBytes key) => Plain.GetHashCode64(in key);

    public bool KeyEquals(in VarBytes first, in VarBytes second) => Plain.KeyEquals(in first, in second);

    public void SingleReader(in VarBytes key, in VarBytes input, in VarBytes value, ref VarBytesOutput output) =>
        Plain.SingleReader(in key, in input, in value, ref output);

    public void ConcurrentReader(in VarBytes key, in VarBytes input, in VarBytes value, ref VarBytesOutput output) =>
        Plain.ConcurrentReader(in key, in input, in value, ref output);

    public void SingleWriter(in VarBytes key, in VarBytes source, ref VarBytes destination) =>
        Plain.SingleWriter(in key, in source, ref destination);

    public void ConcurrentWriter(in VarBytes key, in VarBytes source, ref VarBytes destination) =>
        Plain.ConcurrentWriter(in key, in source, ref destination);

    public int GetInitialValueLength(in VarBytes key, in VarBytes input) => Plain.GetInitialValueLength(in key, in input);

    public int GetUpdatedValueLength(in VarBytes key, in VarBytes input, in VarBytes value) =>
        Plain.GetUpdatedValueLength(in key, in input, in value);

    public void InitialUpdater(in VarBytes key, in VarBytes input, ref VarBytes value) =>
        Plain.InitialUpdater(in key, in input, ref value);

    public void InPlaceUpdater(in VarBytes key, in VarBytes input, ref VarBytes value)
    {
        default(THooks).BeforeInPlaceUpdate(in input);
        Plain.InPlaceUpdater(in key, in input, ref value);
    }

    public void CopyUpdater(in VarBytes key, in VarBytes input, in VarBytes oldValue, ref VarBytes newValue)
    {
        default(THooks).BeforeCopyUpdate(in input);
        Plain.CopyUpdater(in key, in input, in oldValue, ref newValue);
    }

    public void ReadCompletionCallback(
        in VarBytes key, in VarBytes input, in VarBytesOutput output, Empty context, Status status)
    {
    }

    public void RMWCompletionCallback(in VarBytes key, in VarBytes input, Empty context, Status status)
    {
    }

    public void DeleteCompletionCallback(in VarBytes key, Empty context, Status status)
    {
    }
}

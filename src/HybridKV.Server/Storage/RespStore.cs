// The store and session types the server runs, named once (the engine's generic store over RespFunctions).
global using RespStore = HybridKV.HybridKVStore<HybridKV.VarBytes, HybridKV.VarBytes, HybridKV.Server.Storage.RespInput,
    HybridKV.Empty, HybridKV.Empty, HybridKV.Server.Storage.RespFunctions>;
global using RespSession = HybridKV.Sessions.Session<HybridKV.VarBytes, HybridKV.VarBytes,
    HybridKV.Server.Storage.RespInput, HybridKV.Empty, HybridKV.Empty, HybridKV.Server.Storage.RespFunctions>;

; Inno Setup 6 script: a per-user installer for localllm (no administrator rights).
;
;   iscc /DAppVersion=0.1.0 installers\windows\localllm.iss
;   iscc /DAppVersion=0.1.0 /DCudaBundle=..\..\dist\cuda\localllm installers\windows\localllm.iss
;
; Installs dist\localllm (build_bundle.py's output, the CPU build) into
; %LOCALAPPDATA%\Programs\localllm. Given /DCudaBundle (a second bundle built after
; `llama_build.py --portable --install` chose CUDA), the installer carries both and installs
; the CUDA one on computers with an NVIDIA driver, the CPU one elsewhere. Adds a Start menu
; entry (the desktop app), optionally the daemon at sign-in and `localllm` on the user's PATH.
; Uninstalling stops localllm and removes the program; models, chats and settings stay.

#ifndef AppVersion
  #error Pass the version: iscc /DAppVersion=X.Y.Z localllm.iss
#endif
#define CpuBundle "..\..\dist\localllm"

[Setup]
AppId={{7C1E5B9A-4D3F-4A8E-9B61-2F0D8C3A5E17}
AppName=localllm
AppVersion={#AppVersion}
AppPublisher=localllm
DefaultDirName={localappdata}\Programs\localllm
DefaultGroupName=localllm
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=localllm-{#AppVersion}-windows-x64-setup
SetupIconFile=..\..\build\pyinstaller\localllm.ico
UninstallDisplayIcon={app}\localllm-app.exe
Compression=lzma2/max
SolidCompression=yes
ChangesEnvironment=yes
CloseApplications=yes
WizardStyle=modern

[Tasks]
Name: "daemon"; Description: "Start the localllm daemon when I sign in (the API on 127.0.0.1:11435)"
Name: "path"; Description: "Add the localllm command to my PATH"

[Files]
#ifdef CudaBundle
Source: "{#CudaBundle}\*"; DestDir: "{app}"; Check: HasNvidiaDriver; Flags: ignoreversion recursesubdirs createallsubdirs
Source: "{#CpuBundle}\*"; DestDir: "{app}"; Check: not HasNvidiaDriver; Flags: ignoreversion recursesubdirs createallsubdirs
#else
Source: "{#CpuBundle}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs
#endif

[InstallDelete]
; An upgrade may switch between the CPU and CUDA builds: no stale native library may remain.
Type: filesandordirs; Name: "{app}\_internal"

[Icons]
Name: "{userprograms}\localllm"; Filename: "{app}\localllm-app.exe"; Comment: "Chat with models on this computer"
Name: "{userstartup}\localllm daemon"; Filename: "{app}\localllm-app.exe"; Parameters: "serve"; Tasks: daemon

[Registry]
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; ValueData: "{olddata};{app}"; Tasks: path; Check: NotOnPath

[Run]
Filename: "{app}\localllm-app.exe"; Parameters: "serve"; Tasks: daemon; Flags: nowait runhidden
Filename: "{app}\localllm-app.exe"; Description: "Open localllm"; Flags: postinstall nowait skipifsilent

[UninstallRun]
Filename: "{sys}\taskkill.exe"; Parameters: "/F /T /FI ""USERNAME eq {username}"" /IM localllm.exe /IM localllm-app.exe"; Flags: runhidden; RunOnceId: "StopLocalllm"

[Code]
function HasNvidiaDriver: Boolean;
begin
  { The NVIDIA display driver installs the CUDA driver library into System32. }
  Result := FileExists(ExpandConstant('{sys}\nvcuda.dll'));
end;

function UserPath: String;
begin
  if not RegQueryStringValue(HKCU, 'Environment', 'Path', Result) then
    Result := '';
end;

function NotOnPath: Boolean;
begin
  Result := Pos(';' + Uppercase(ExpandConstant('{app}')) + ';', ';' + Uppercase(UserPath) + ';') = 0;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
var
  Path, Entry: String;
  At: Integer;
begin
  if CurUninstallStep <> usPostUninstall then
    exit;
  Path := UserPath;
  Entry := ';' + ExpandConstant('{app}');
  At := Pos(Uppercase(Entry), Uppercase(Path));
  if At > 0 then
  begin
    Delete(Path, At, Length(Entry));
    RegWriteExpandStringValue(HKCU, 'Environment', 'Path', Path);
  end;
end;

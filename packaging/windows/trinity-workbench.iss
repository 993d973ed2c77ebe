; Inno Setup script for Trinity Workbench (Windows). Build the app first with
;   python packaging\build.py
; then compile this script from the repository root:
;   iscc /DAppVersion=0.1.0 packaging\windows\trinity-workbench.iss
; The installer goes to dist\installer\. Per-user install (no admin rights needed).

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif

[Setup]
AppId={{6F1C2B4E-8E0B-4C5D-9B7A-2C1D3E4F5A60}
AppName=Trinity Workbench
AppVersion={#AppVersion}
AppPublisher=Trinity Workbench
DefaultDirName={localappdata}\Programs\Trinity Workbench
DefaultGroupName=Trinity Workbench
PrivilegesRequired=lowest
OutputDir=..\..\dist\installer
OutputBaseFilename=trinity-workbench-{#AppVersion}-windows-x64-setup
SetupIconFile=..\..\workbench\resources\icons\trinity-workbench.ico
UninstallDisplayIcon={app}\trinity-workbench.exe
Compression=lzma2/max
SolidCompression=yes
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
WizardStyle=modern

[Files]
Source: "..\..\dist\trinity-workbench\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\Trinity Workbench"; Filename: "{app}\trinity-workbench.exe"
Name: "{userdesktop}\Trinity Workbench"; Filename: "{app}\trinity-workbench.exe"; Tasks: desktopicon

[Tasks]
Name: "desktopicon"; Description: "Create a desktop shortcut"; GroupDescription: "Shortcuts:"

[Run]
Filename: "{app}\trinity-workbench.exe"; Description: "Start Trinity Workbench"; Flags: nowait postinstall skipifsilent
